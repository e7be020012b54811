//! The `Provider` one call talks to: each send and lookup is evaluated against the
//! world, then parked until the driver answers it (the drain's provider answers at
//! once, truthfully).

use super::plans::Variant;
use super::world::World;
use super::{LEASE, MARGIN, SECOND, lock, micros};
use command_journal::recovery::{LOOKUP_DEADLINE, Recovery};
use command_journal::sends::{LookupRequest, RetrieveRequest};
use command_journal::{Execution, JournalError, Provider, ProviderAnswer, SendRequest};
use serde_json::Value;
use std::collections::HashMap;
use std::sync::atomic::AtomicI64;
use std::sync::{Arc, Mutex};
use tokio::sync::{mpsc, oneshot};

pub(super) enum Msg {
    Parked {
        call: u64,
        parked: Parked,
    },
    Done {
        call: u64,
        result: Result<Execution, JournalError>,
    },
    /// A recovery job ended.
    Recovered {
        call: u64,
        result: Result<Recovery, JournalError>,
    },
    Panicked(Box<dyn std::any::Any + Send>),
}

pub(super) enum Parked {
    Send {
        request: usize,
        deadline_at: i64,
        reply: oneshot::Sender<ProviderAnswer>,
    },
    Lookup {
        /// The command whose key is looked up (a recovery job looks up many).
        command: usize,
        account: &'static str,
        key: String,
        truth: ProviderAnswer,
        evaluated_at: i64,
        deadline_at: i64,
        reply: oneshot::Sender<ProviderAnswer>,
    },
}

pub(super) struct SimProvider {
    pub(super) world: Arc<Mutex<World>>,
    /// `None`: the drain's provider, which answers every call at once, truthfully.
    pub(super) tx: Option<mpsc::UnboundedSender<Msg>>,
    pub(super) call: u64,
    pub(super) command: usize,
    pub(super) variant: Variant,
    pub(super) first_key: String,
    pub(super) parameters: Value,
    /// When the call was spawned: its lease was acquired no earlier.
    pub(super) spawned_at: i64,
    /// When the call last resumed (spawned, or answered by the driver).
    pub(super) resumed: Arc<AtomicI64>,
    /// A recovery job's provider: the command of every key it may look up. A job never
    /// sends.
    pub(super) keys: Option<Arc<HashMap<String, usize>>>,
}

impl Provider for SimProvider {
    async fn send(&self, request: SendRequest) -> ProviderAnswer {
        if self.keys.is_some() {
            lock(&self.world).violation(self.command, "a recovery job sent");
        }
        let (id, deadline_at) = {
            let mut world = lock(&self.world);
            let id = world.receive(self, &request);
            (id, world.now() + micros(request.deadline))
        };
        let Some(tx) = &self.tx else {
            let mut world = lock(&self.world);
            world.process(id);
            world.sender_left(id);
            return world.deliver(id);
        };
        let (reply, answer) = oneshot::channel();
        let parked = Parked::Send {
            request: id,
            deadline_at,
            reply,
        };
        let call = self.call;
        if tx.send(Msg::Parked { call, parked }).is_err() {
            return ProviderAnswer::Unknown;
        }
        answer.await.unwrap_or(ProviderAnswer::Unknown)
    }

    async fn lookup(&self, request: LookupRequest) -> ProviderAnswer {
        let key = request.key.as_str();
        let account = self.variant.account();
        let command = match &self.keys {
            None => self.command,
            Some(keys) => match keys.get(key) {
                Some(&command) => command,
                None => lock(&self.world)
                    .violation(self.command, "a recovery job asked a key of no command"),
            },
        };
        let (truth, evaluated_at) = {
            let mut world = lock(&self.world);
            (world.lookup(command, account, key), world.now())
        };
        let Some(tx) = &self.tx else {
            return truth;
        };
        let (reply, answer) = oneshot::channel();
        // The lookup's deadline ends 10 s before the call's lease, acquired no
        // earlier than the call was spawned; a recovery job's lookups (before any
        // lease) wait `LOOKUP_DEADLINE`.
        let deadline_at = if self.keys.is_some() {
            evaluated_at + micros(LOOKUP_DEADLINE)
        } else {
            self.spawned_at + (LEASE - MARGIN) * SECOND
        };
        let parked = Parked::Lookup {
            command,
            account,
            key: key.to_owned(),
            truth,
            evaluated_at,
            deadline_at,
            reply,
        };
        let call = self.call;
        if tx.send(Msg::Parked { call, parked }).is_err() {
            return ProviderAnswer::Unknown;
        }
        answer.await.unwrap_or(ProviderAnswer::Unknown)
    }

    /// Answered at once (never parked), lost sometimes but in the drain.
    async fn retrieve(&self, request: RetrieveRequest) -> ProviderAnswer {
        let command = match &self.keys {
            None => self.command,
            Some(keys) => match keys.get(request.key.as_str()) {
                Some(&command) => command,
                None => lock(&self.world)
                    .violation(self.command, "a recovery job read a key of no command"),
            },
        };
        let job = self.keys.is_some();
        let lossy = self.tx.is_some();
        lock(&self.world).retrieve(command, self.variant, job, &request, lossy)
    }
}
