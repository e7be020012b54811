//! CPU time of the processes in play (this runner, the Node.js peer, the emulator's
//! JVM), from `/proc/{pid}/stat`, to tell which one limits a figure.

/// CPU seconds (user + system, all threads) of each watched process.
#[derive(Debug, Clone, Copy, Default)]
pub struct Cpu {
    /// This process: the crate's side (and the idle driver of the peer).
    pub runner: f64,
    /// The Node.js peer.
    pub node: f64,
    /// The emulator's JVM.
    pub emulator: f64,
}

impl Cpu {
    /// `self - earlier`.
    pub fn since(&self, earlier: &Cpu) -> Cpu {
        Cpu {
            runner: self.runner - earlier.runner,
            node: self.node - earlier.node,
            emulator: self.emulator - earlier.emulator,
        }
    }

    /// Field-wise sum.
    pub fn add(&mut self, other: &Cpu) {
        self.runner += other.runner;
        self.node += other.node;
        self.emulator += other.emulator;
    }
}

/// Reads the CPU time of the runner, the peer and the emulator.
pub struct CpuMeter {
    node: Option<u32>,
    emulator: Option<u32>,
    tick: f64,
}

impl CpuMeter {
    pub fn new(node: Option<u32>, emulator: Option<u32>) -> Self {
        // SAFETY: sysconf has no preconditions.
        let tick = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
        Self {
            node,
            emulator,
            tick: if tick > 0 { tick as f64 } else { 100.0 },
        }
    }

    fn seconds(&self, pid: Option<u32>) -> f64 {
        let Some(pid) = pid else { return f64::NAN };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            return f64::NAN;
        };
        // Fields after the parenthesised command name: state is the first, utime
        // the 12th and stime the 13th.
        let Some(rest) = stat.rsplit_once(')').map(|(_, rest)| rest) else {
            return f64::NAN;
        };
        let fields: Vec<&str> = rest.split_whitespace().collect();
        let ticks = |i: usize| fields.get(i).and_then(|v| v.parse::<u64>().ok());
        match (ticks(11), ticks(12)) {
            (Some(user), Some(system)) => (user + system) as f64 / self.tick,
            _ => f64::NAN,
        }
    }

    pub fn now(&self) -> Cpu {
        Cpu {
            runner: self.seconds(Some(std::process::id())),
            node: self.seconds(self.node),
            emulator: self.seconds(self.emulator),
        }
    }
}

/// The 1-minute load average, a measure of what else ran on the machine.
pub fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|l| l.split_whitespace().next().map(str::to_owned))
        .unwrap_or_else(|| "?".to_owned())
}
