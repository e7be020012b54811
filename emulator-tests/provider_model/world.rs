//! The simulated provider's world: the requests it received, its key store, its
//! lagging lookup index and its ledger, the run's oracle. Every method runs under the
//! world's lock, at the manual clock's time.

use super::customer::{CustomerTally, Object, action};
use super::plans::Variant;
use super::provider::SimProvider;
use super::replays::Replay;
use super::{CUTOFF, DECLINE_PERCENT, LEASE, MARGIN, RETENTION, SECOND, SETTLE, micros, short};
use chrono::TimeDelta;
use command_journal::sends::AttemptNumber;
use command_journal::time::ManualClock;
use command_journal::{Clock, ProviderAnswer, ResultEnvelope, SendRequest, Timestamp};
use serde_json::json;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;
use std::sync::atomic::Ordering;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Outcome {
    /// The charge at this index of the ledger.
    Charged(usize),
    Declined,
    /// A 5xx the provider stored for the key (as Stripe does once its endpoint began
    /// executing), after making the charge at this index, or before charging
    /// (`None`); replayed to every later request with the key while it is retained.
    StoredError(Option<usize>),
    /// An object that waits for the customer, at this index of the objects.
    Customer(usize),
}

impl Outcome {
    /// The charge the key holds, if any.
    pub(super) fn charge(self) -> Option<usize> {
        match self {
            Self::Charged(index) | Self::StoredError(Some(index)) => Some(index),
            Self::Declined | Self::StoredError(None) | Self::Customer(_) => None,
        }
    }

    /// Whether the provider holds a charge or a decline for the key: a later attempt
    /// may not be sent over it. A 5xx stored before charging holds neither, and no
    /// request with the key charges while the provider keeps it.
    pub(super) fn binding(self) -> bool {
        self != Self::StoredError(None)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum State {
    /// Accepted, not processed yet: processed or dropped before the clock passes
    /// `latest`.
    Pending,
    Processed(Outcome),
    /// Never processed (lost on the way, or sent after its lease).
    Dropped,
}

pub(super) struct Request {
    pub(super) command: usize,
    pub(super) variant: Variant,
    pub(super) account: &'static str,
    pub(super) key: String,
    pub(super) attempt: AttemptNumber,
    pub(super) sent_at: i64,
    /// The contract's bound: the end of the lease it could be sent under, plus the
    /// settle window. Processed and visible to lookups by then, or never processed.
    pub(super) latest: i64,
    pub(super) state: State,
    /// The sender was answered or crashed: processing now is "late".
    pub(super) sender_left: bool,
    /// Processed as a replay of the key's stored 5xx: its sender hears
    /// `ReplayedUnknown` (the request that stored it heard a fresh 500, `Unknown`).
    pub(super) replay: bool,
    /// The end of the customer's window the request carried.
    pub(super) act_by: i64,
}

/// What the provider's key store holds for `(account, key)`.
pub(super) struct Entry {
    pub(super) outcome: Outcome,
    /// From when a lookup sees it (the index lags).
    pub(super) visible_at: i64,
    /// From when the provider has forgotten the key.
    pub(super) forget_at: i64,
}

pub(super) struct Charge {
    pub(super) account: &'static str,
    pub(super) key: String,
    pub(super) envelope: ResultEnvelope,
}

#[derive(Debug, Default)]
pub(super) struct ProviderTally {
    pub(super) sends: u64,
    pub(super) resends: u64,
    pub(super) sends_attempt_2_plus: u64,
    pub(super) processed: u64,
    pub(super) processed_late: u64,
    pub(super) deduplicated: u64,
    pub(super) dropped: u64,
    pub(super) sent_after_lease: u64,
    pub(super) forced: u64,
    pub(super) charges: u64,
    pub(super) declines: u64,
    pub(super) reprocessed_forgotten: u64,
    pub(super) lookups: u64,
    pub(super) lookups_not_visible_yet: u64,
    pub(super) lookups_forgotten: u64,
    /// Requests sent in the last six minutes before their attempt's cutoff.
    pub(super) sends_near_cutoff: u64,
    /// Lookups made while a settle bound of one of the command's requests is ahead.
    pub(super) lookups_before_settle: u64,
    /// 5xx stored for a new key, after the charge and before any.
    pub(super) stored_errors_charged: u64,
    pub(super) stored_errors_uncharged: u64,
    /// Requests processed into a replay of their key's stored 5xx, charging nothing.
    pub(super) replays: u64,
    /// Replays a sender heard (`ReplayedUnknown`).
    pub(super) replays_heard: u64,
    /// Requests within their lease for a key a sender heard replayed, before the
    /// journal was seen to record it (a sender whose record was refused).
    pub(super) resends_after_replay: u64,
    /// Lookups of a key holding a stored 5xx: the charge found, or no charge.
    pub(super) lookups_stored_found: u64,
    pub(super) lookups_stored_uncharged: u64,
}

pub(super) struct World {
    pub(super) clock: Arc<ManualClock>,
    pub(super) origin: i64,
    /// The run's seed: with a key, whether its first processing stores a 5xx.
    pub(super) seed: u64,
    pub(super) rng: fastrand::Rng,
    pub(super) requests: Vec<Request>,
    pub(super) pending: BTreeSet<usize>,
    pub(super) by_command: HashMap<usize, Vec<usize>>,
    pub(super) entries: HashMap<(&'static str, String), Entry>,
    pub(super) first_seen: HashMap<(&'static str, String), i64>,
    /// Every key the provider saw, and the command whose request carried it.
    pub(super) key_owner: HashMap<String, usize>,
    /// (command, operation, attempt) -> the one key it was sent with.
    pub(super) attempt_keys: HashMap<(usize, &'static str, AttemptNumber), String>,
    pub(super) charges: Vec<Charge>,
    pub(super) charge_of: HashMap<usize, usize>,
    pub(super) declined: BTreeSet<usize>,
    /// Commands a sender of which heard their key's stored 5xx replayed.
    pub(super) replays: BTreeMap<usize, Replay>,
    /// This generation's history: `[cN]` lines of command N, `[clock]` lines.
    pub(super) log: Vec<String>,
    /// Percent of requests lost on the way (the generation's mood).
    pub(super) lost: u32,
    pub(super) tally: ProviderTally,
    /// The objects that wait or waited for a customer (`customer`).
    pub(super) objects: Vec<Object>,
    pub(super) customers: CustomerTally,
}

impl World {
    pub(super) fn new(clock: Arc<ManualClock>, seed: u64) -> Self {
        let origin = Timestamp::from_datetime(clock.now())
            .expect("in range")
            .micros();
        Self {
            clock,
            origin,
            seed,
            rng: fastrand::Rng::with_seed(seed ^ 0x0070_726f_7669_6465),
            requests: Vec::new(),
            pending: BTreeSet::new(),
            by_command: HashMap::new(),
            entries: HashMap::new(),
            first_seen: HashMap::new(),
            key_owner: HashMap::new(),
            attempt_keys: HashMap::new(),
            charges: Vec::new(),
            charge_of: HashMap::new(),
            declined: BTreeSet::new(),
            replays: BTreeMap::new(),
            log: Vec::new(),
            lost: 20,
            tally: ProviderTally::default(),
            objects: Vec::new(),
            customers: CustomerTally::default(),
        }
    }

    pub(super) fn now(&self) -> i64 {
        Timestamp::from_datetime(self.clock.now())
            .expect("in range")
            .micros()
    }

    /// `t` as seconds from the run's start.
    pub(super) fn at(&self, t: i64) -> String {
        format!("+{:.3}s", (t - self.origin) as f64 / SECOND as f64)
    }

    pub(super) fn note(&mut self, command: Option<usize>, text: String) {
        let tag = match command {
            Some(c) => format!("[c{c}]"),
            None => "[clock]".to_owned(),
        };
        let line = format!("t={} {tag} {text}", self.at(self.now()));
        self.log.push(line);
    }

    pub(super) fn history(&self, command: usize) -> String {
        let tag = format!("[c{command}]");
        self.log
            .iter()
            .filter(|line| line.contains(&tag) || line.contains("[clock]"))
            .map(|line| format!("  {line}\n"))
            .collect()
    }

    pub(super) fn violation(&self, command: usize, what: &str) -> ! {
        panic!(
            "INVARIANT VIOLATED for command c{command}: {what}\nits history (clock lines \
             included; times from the run's start):\n{}",
            self.history(command)
        )
    }

    /// A request arrives (`send` was called): checked, then queued, unprocessed.
    pub(super) fn receive(&mut self, p: &SimProvider, request: &SendRequest) -> usize {
        let now = self.now();
        let command = p.command;
        let deadline = micros(request.deadline);
        let operation = p.variant.operation();
        let key = request.key.to_owned();
        if request.parameters != p.parameters {
            self.violation(command, "a send with other parameters than the plan's");
        }
        if !(SECOND..=(LEASE - MARGIN) * SECOND).contains(&deadline) {
            self.violation(command, &format!("a send deadline of {deadline} µs"));
        }
        let seen = self.key_owner.contains_key(&key);
        let owner = *self.key_owner.entry(key.clone()).or_insert(command);
        if owner != command {
            self.violation(
                command,
                &format!("key …{} also sent for c{owner}", short(&key)),
            );
        }
        let known = self
            .attempt_keys
            .entry((command, operation, request.attempt))
            .or_insert_with(|| key.clone())
            .clone();
        if known != key {
            self.violation(command, "two keys for one attempt");
        }
        let first_key_ok = if request.attempt == 1 {
            key == p.first_key
        } else {
            key != p.first_key && key.starts_with("cj1-")
        };
        // A re-send may be the first request the provider sees with its key (the
        // earlier sender crashed between permit and send); a first send may not follow
        // one it saw.
        if !first_key_ok || (!request.resend && seen) {
            self.violation(
                command,
                &format!(
                    "attempt {} sent with key …{} resend={}",
                    request.attempt,
                    short(&key),
                    request.resend
                ),
            );
        }
        if request.attempt >= 2 {
            self.tally.sends_attempt_2_plus += 1;
            self.check_earlier_attempts(command, request.attempt);
        }
        // The permit's lease ends `MARGIN` after the deadline, counted from the step
        // that computed it, which ran no earlier than the call last resumed.
        let lease_end = p.resumed.load(Ordering::SeqCst) + deadline + MARGIN * SECOND;
        let state = if now >= lease_end {
            self.tally.sent_after_lease += 1;
            State::Dropped
        } else {
            State::Pending
        };
        let id = self.requests.len();
        self.requests.push(Request {
            command,
            variant: p.variant,
            account: p.variant.account(),
            key: key.clone(),
            attempt: request.attempt,
            sent_at: now,
            latest: lease_end + SETTLE * SECOND,
            state,
            sender_left: false,
            replay: false,
            act_by: request.act_by.micros(),
        });
        if state == State::Pending {
            self.pending.insert(id);
            self.check_replayed(command, &key, request.attempt);
        }
        self.by_command.entry(command).or_default().push(id);
        self.first_seen
            .entry((p.variant.account(), key.clone()))
            .or_insert(now);
        self.tally.sends += 1;
        let first = self.first_seen[&(p.variant.account(), key.clone())];
        let near_cutoff = now >= first + (CUTOFF - LEASE - SETTLE) * SECOND;
        if near_cutoff {
            self.tally.sends_near_cutoff += 1;
        }
        if request.resend {
            self.tally.resends += 1;
        }
        let text = format!(
            "call#{} {:?}: request #{id} attempt {} key …{} resend={} deadline {}s, lease \
             end {} (must be visible by {}){}",
            p.call,
            p.variant,
            request.attempt,
            short(&key),
            request.resend,
            deadline / SECOND,
            self.at(lease_end),
            self.at(lease_end + SETTLE * SECOND),
            match (state, near_cutoff) {
                (State::Dropped, _) => ", sent after its lease: never processed",
                (_, true) => ", NEAR ITS CUTOFF",
                _ => "",
            }
        );
        self.note(Some(command), text);
        id
    }

    /// Attempt `attempt` is being sent: the provider holds no outcome for an earlier
    /// attempt of the command and will never process one of its requests.
    pub(super) fn check_earlier_attempts(&self, command: usize, attempt: AttemptNumber) {
        for &id in self.by_command.get(&command).into_iter().flatten() {
            let r = &self.requests[id];
            if r.attempt >= attempt {
                continue;
            }
            match r.state {
                State::Pending => self.violation(
                    command,
                    &format!(
                        "attempt {attempt} sent while request #{id} of attempt {} may still \
                         be processed (until {})",
                        r.attempt,
                        self.at(r.latest)
                    ),
                ),
                State::Processed(outcome) if outcome.binding() => self.violation(
                    command,
                    &format!(
                        "attempt {attempt} sent although the provider holds {outcome:?} for \
                         attempt {} (request #{id})",
                        r.attempt
                    ),
                ),
                State::Processed(_) | State::Dropped => {}
            }
        }
    }

    /// Processes request `id` now, if it is still pending: the same outcome as the
    /// key's while the provider remembers it (a stored 5xx replayed), else a new
    /// charge, decline or stored 5xx.
    pub(super) fn process(&mut self, id: usize) {
        if self.requests[id].state != State::Pending {
            return;
        }
        self.pending.remove(&id);
        let now = self.now();
        let r = &self.requests[id];
        let (command, slot, late) = (r.command, (r.account, r.key.clone()), r.sender_left);
        let remembered = self
            .entries
            .get(&slot)
            .filter(|entry| now < entry.forget_at)
            .map(|entry| entry.outcome);
        let outcome = match remembered {
            Some(outcome @ Outcome::StoredError(_)) => {
                self.tally.deduplicated += 1;
                self.tally.replays += 1;
                self.requests[id].replay = true;
                self.note(
                    Some(command),
                    format!("request #{id} processed: key known, its stored 5xx replayed"),
                );
                outcome
            }
            Some(outcome) => {
                self.tally.deduplicated += 1;
                self.note(
                    Some(command),
                    format!("request #{id} processed: key known, {outcome:?} again"),
                );
                outcome
            }
            None => self.process_new(id, now),
        };
        self.tally.processed += 1;
        if late {
            self.tally.processed_late += 1;
        }
        self.requests[id].state = State::Processed(outcome);
    }

    /// Request `id` is the first the provider processes with its key (or the first
    /// since it forgot the key): a stored 5xx, after the charge or before it, when the
    /// key's seeded roll says so; else a decline or a charge.
    fn process_new(&mut self, id: usize, now: i64) -> Outcome {
        let r = &self.requests[id];
        let (command, account, key, latest, sent_at, late) = (
            r.command,
            r.account,
            r.key.clone(),
            r.latest,
            r.sent_at,
            r.sender_left,
        );
        let slot = (account, key.clone());
        let first = if self.entries.contains_key(&slot) {
            // The key was forgotten: it counts from this request.
            self.tally.reprocessed_forgotten += 1;
            self.first_seen.insert(slot.clone(), sent_at);
            sent_at
        } else {
            self.first_seen.get(&slot).copied().unwrap_or(sent_at)
        };
        let outcome = match self.stores_error(id) {
            _ if self.waits_for_customer(id) => self.open_object(id),
            Some(true) => {
                self.tally.stored_errors_charged += 1;
                Outcome::StoredError(Some(self.charge(id)))
            }
            Some(false) => {
                self.tally.stored_errors_uncharged += 1;
                Outcome::StoredError(None)
            }
            None if self.rng.u32(..100) < DECLINE_PERCENT => {
                self.declined.insert(command);
                self.tally.declines += 1;
                Outcome::Declined
            }
            None => Outcome::Charged(self.charge(id)),
        };
        let visible_at = match self.rng.u32(..10) {
            0..4 => now,
            4..7 => latest,
            _ => self.rng.i64(now..=latest),
        };
        self.entries.insert(
            slot,
            Entry {
                outcome,
                visible_at,
                forget_at: first + RETENTION * SECOND,
            },
        );
        let text = format!(
            "request #{id} processed{}: {outcome:?}{}, visible to lookups at {}, key \
             forgotten at {}",
            if late { " after its sender left" } else { "" },
            match outcome {
                Outcome::StoredError(_) => " (a 5xx stored for the key: its sender hears a 500)",
                _ => "",
            },
            self.at(visible_at),
            self.at(first + RETENTION * SECOND)
        );
        self.note(Some(command), text);
        outcome
    }

    /// The charge request `id` makes: a new entry in the ledger, the command's one.
    pub(super) fn charge(&mut self, id: usize) -> usize {
        let r = &self.requests[id];
        let (command, account, key) = (r.command, r.account, r.key.clone());
        if let Some(&earlier) = self.charge_of.get(&command) {
            let c = &self.charges[earlier];
            self.violation(
                command,
                &format!(
                    "SECOND CHARGE: request #{id} (key …{} in {account}) charges again; the \
                     command's charge ch_{earlier} was made under key …{} in {}",
                    short(&key),
                    short(&c.key),
                    c.account
                ),
            );
        }
        let index = self.charges.len();
        let envelope = ResultEnvelope::new(&json!({
            "id": format!("ch_{index}"),
            "object": "charge",
            "account": account,
            "amount": 1_000 + command as i64,
            "currency": "eur",
            "status": "succeeded",
            "metadata": {"journal_key": key},
        }))
        .expect("a valid envelope");
        self.charges.push(Charge {
            account,
            key,
            envelope,
        });
        self.charge_of.insert(command, index);
        self.tally.charges += 1;
        index
    }

    pub(super) fn drop_request(&mut self, id: usize) {
        if self.requests[id].state == State::Pending {
            self.pending.remove(&id);
            self.requests[id].state = State::Dropped;
            self.tally.dropped += 1;
            let command = self.requests[id].command;
            self.note(
                Some(command),
                format!("request #{id} dropped: never processed"),
            );
        }
    }

    /// What the provider answers the sender of `id` now: a 5xx stored by this
    /// request is a fresh 500, one stored by an earlier request is replayed.
    pub(super) fn answer_of(&self, id: usize) -> ProviderAnswer {
        let r = &self.requests[id];
        match r.state {
            State::Processed(Outcome::Charged(index)) => {
                ProviderAnswer::Succeeded(self.charges[index].envelope.clone())
            }
            State::Processed(Outcome::Declined) => ProviderAnswer::Declined,
            State::Processed(Outcome::Customer(_)) => ProviderAnswer::CustomerMustAct(action()),
            State::Processed(Outcome::StoredError(_)) if r.replay => {
                ProviderAnswer::ReplayedUnknown
            }
            State::Processed(Outcome::StoredError(_)) | State::Pending | State::Dropped => {
                ProviderAnswer::Unknown
            }
        }
    }

    pub(super) fn sender_left(&mut self, id: usize) {
        self.requests[id].sender_left = true;
    }

    /// The lookup of `key` in `account`, evaluated now.
    pub(super) fn lookup(
        &mut self,
        command: usize,
        account: &'static str,
        key: &str,
    ) -> ProviderAnswer {
        let now = self.now();
        self.tally.lookups += 1;
        if self.settles_between(command, now, i64::MAX) {
            self.tally.lookups_before_settle += 1;
        }
        let (answer, why) = match self.entries.get(&(account, key.to_owned())) {
            Some(entry) if now >= entry.forget_at => {
                self.tally.lookups_forgotten += 1;
                (ProviderAnswer::NotFound, "the key was forgotten")
            }
            Some(entry) if entry.outcome == Outcome::StoredError(None) => {
                self.tally.lookups_stored_uncharged += 1;
                (ProviderAnswer::NotFound, "a 5xx stored before any charge")
            }
            Some(entry) if now < entry.visible_at => {
                self.tally.lookups_not_visible_yet += 1;
                (ProviderAnswer::NotFound, "not visible yet")
            }
            Some(Entry {
                outcome: Outcome::Customer(i),
                ..
            }) => self.object_found(*i),
            Some(entry) => match entry.outcome.charge() {
                Some(index) => {
                    if matches!(entry.outcome, Outcome::StoredError(_)) {
                        self.tally.lookups_stored_found += 1;
                    }
                    (
                        ProviderAnswer::Succeeded(self.charges[index].envelope.clone()),
                        "visible",
                    )
                }
                None => (ProviderAnswer::Declined, "visible"),
            },
            None => (ProviderAnswer::NotFound, "no entry"),
        };
        if let Some(&owner) = self.key_owner.get(key)
            && owner != command
        {
            self.violation(command, &format!("looked up c{owner}'s key"));
        }
        let text = format!(
            "lookup of key …{} in {account} evaluated: {} ({why})",
            short(key),
            lookup_text(&answer)
        );
        self.note(Some(command), text);
        answer
    }

    /// Moves the clock forward by `delta` µs. First every pending request whose
    /// contract bound falls within the jump is processed (charged or declined, and
    /// visible by its bound) or dropped for good.
    pub(super) fn advance(&mut self, delta: i64, why: &str) {
        let target = self.now() + delta;
        let due: Vec<usize> = self
            .pending
            .iter()
            .copied()
            .filter(|&id| self.requests[id].latest <= target)
            .collect();
        for id in due {
            self.tally.forced += 1;
            if self.rng.u32(..100) >= self.lost {
                self.process(id);
            } else {
                self.drop_request(id);
            }
        }
        self.clock.advance(TimeDelta::microseconds(delta));
        self.expire_objects();
        let text = format!("{why}: clock +{:.3}s", delta as f64 / SECOND as f64);
        self.note(None, text);
    }

    /// The provider works through its queue: some pending requests are processed now,
    /// or lost.
    pub(super) fn work(&mut self) {
        self.customer_acts();
        let ids: Vec<usize> = self.pending.iter().copied().collect();
        for id in ids {
            if self.rng.u32(..100) < 20 {
                if self.rng.u32(..100) >= self.lost {
                    self.process(id);
                } else {
                    self.drop_request(id);
                }
            }
        }
    }

    /// Every pending request processed or dropped (the drain).
    pub(super) fn settle_all(&mut self) {
        let ids: Vec<usize> = self.pending.iter().copied().collect();
        for id in ids {
            if self.rng.u32(..100) >= self.lost {
                self.process(id);
            } else {
                self.drop_request(id);
            }
        }
    }
}

pub(super) fn lookup_text(answer: &ProviderAnswer) -> &'static str {
    match answer {
        ProviderAnswer::Succeeded(_) => "Found",
        ProviderAnswer::Declined => "Declined",
        ProviderAnswer::NotFound => "NotFound",
        ProviderAnswer::Unknown
        | ProviderAnswer::ReplayedUnknown
        | ProviderAnswer::Indeterminate
        | ProviderAnswer::CustomerMustAct(_) => "Unavailable",
        ProviderAnswer::SucceededWithReference(_) => "FoundWithReference",
        ProviderAnswer::Closed => "Closed",
    }
}

pub(super) fn send_text(answer: &ProviderAnswer) -> &'static str {
    match answer {
        ProviderAnswer::Succeeded(_) => "Succeeded",
        ProviderAnswer::Declined => "Declined",
        ProviderAnswer::Unknown => "Ambiguous",
        ProviderAnswer::ReplayedUnknown => "ReplayedUnknown",
        ProviderAnswer::Indeterminate => "Indeterminate",
        ProviderAnswer::NotFound => "NotFound",
        ProviderAnswer::SucceededWithReference(_) => "SucceededWithReference",
        ProviderAnswer::CustomerMustAct(_) => "CustomerMustAct",
        ProviderAnswer::Closed => "Closed",
    }
}
