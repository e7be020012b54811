//! The Node.js peer as a long-lived child process, driven over JSON lines, so that
//! neither Node.js start-up nor module loading is measured.

use serde_json::{Value, json};
use std::path::Path;
use std::process::Stdio;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, Lines};
use tokio::process::{Child, ChildStdin, ChildStdout, Command};

/// A running `node bench/node-peer/peer.js`.
pub struct Peer {
    _child: Child,
    stdin: ChildStdin,
    stdout: Lines<BufReader<ChildStdout>>,
    next_id: u64,
}

impl Peer {
    /// Starts the peer against the emulator at `emulator_host`.
    pub async fn start(node: &str, script: &Path, emulator_host: &str) -> Result<Self, String> {
        let mut child = Command::new(node)
            .arg(script)
            .env("FIRESTORE_EMULATOR_HOST", emulator_host)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .kill_on_drop(true)
            .spawn()
            .map_err(|e| format!("cannot start {node}: {e}"))?;
        let stdin = child.stdin.take().ok_or("no stdin")?;
        let stdout = child.stdout.take().ok_or("no stdout")?;
        Ok(Self {
            _child: child,
            stdin,
            stdout: BufReader::new(stdout).lines(),
            next_id: 0,
        })
    }

    /// The peer's process id.
    pub fn pid(&self) -> Option<u32> {
        self._child.id()
    }

    /// Sends one request (`{"op": …, …}`) and waits for its answer.
    pub async fn call(&mut self, mut request: Value) -> Result<Value, String> {
        self.next_id += 1;
        request["id"] = json!(self.next_id);
        let mut line = request.to_string();
        line.push('\n');
        self.stdin
            .write_all(line.as_bytes())
            .await
            .map_err(|e| format!("peer stdin: {e}"))?;
        self.stdin.flush().await.map_err(|e| e.to_string())?;
        let answer = self
            .stdout
            .next_line()
            .await
            .map_err(|e| format!("peer stdout: {e}"))?
            .ok_or("the peer exited")?;
        let mut answer: Value =
            serde_json::from_str(&answer).map_err(|e| format!("peer answer {answer:?}: {e}"))?;
        if answer["id"] != json!(self.next_id) {
            return Err(format!("peer answered out of order: {answer}"));
        }
        if let Some(err) = answer.get("err") {
            return Err(format!("peer failed: {}", err.as_str().unwrap_or_default()));
        }
        Ok(answer["ok"].take())
    }
}
