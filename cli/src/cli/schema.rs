//! What each subcommand reads on stdin: its keys, their types and rules, and a worked
//! example, shown by `--help` and printed by `command-journal example`.

use crate::expected::expected_for;
use crate::ledger::COMPENSATION_SUBTYPE_KEY;
use crate::ledger::{TRANSFER_KEYS, V4_EFFECT_KEYS};
use command_journal_core::tools::transaction::OperationName;

/// A subcommand that reads a JSON object on stdin.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Subject {
    /// `identity`.
    Identity,
    /// `register`.
    Register,
    /// `acquire`.
    Acquire,
    /// `start`.
    Start,
    /// `complete`.
    Complete,
    /// `fail`.
    Fail,
    /// `status`.
    Status,
    /// `send begin`.
    SendBegin,
    /// `send outcome`.
    ProviderAnswer,
    /// `send reconcile`.
    SendReconcile,
    /// `ledger fingerprint`.
    LedgerFingerprint,
    /// `ledger accept`.
    LedgerAccept,
    /// `ledger replay`.
    LedgerReplay,
    /// `ledger link`.
    LedgerLink,
}

/// One key of a stdin object.
struct Field {
    name: &'static str,
    kind: &'static str,
    presence: &'static str,
}

const fn field(name: &'static str, kind: &'static str, presence: &'static str) -> Field {
    Field {
        name,
        kind,
        presence,
    }
}

const REQUIRED: &str = "required";
const OPTIONAL: &str = "optional";

const COMMAND: [Field; 7] = [
    field("environment", "string", REQUIRED),
    field("callerScopeKind", "string", REQUIRED),
    field("callerId", "string", REQUIRED),
    field("commandId", "string", REQUIRED),
    field("commandType", "string", REQUIRED),
    field("endpointSchemaVersion", "integer", REQUIRED),
    field("payload", "object", REQUIRED),
];

const LEDGER_KEY: [Field; 4] = [
    field("classId", "string", REQUIRED),
    field("featCode", "string", REQUIRED),
    field("idempotencyKey", "string", REQUIRED),
    field("scope", "object", REQUIRED),
];

const PLAN: [Field; 5] = [
    field("family", "string", REQUIRED),
    field("fingerprintVersion", "integer", REQUIRED),
    field(
        "effects",
        "array of objects",
        "required unless family is internal_transfer",
    ),
    field(
        "intent",
        "object or null",
        "required for store_purchase, rent_payment, insurance_premium, overdraft_fee",
    ),
    field("transfer", "object", "required for internal_transfer only"),
];

const HISTORICAL: [Field; 7] = [
    field("family", "string", REQUIRED),
    field("fingerprint", "string", REQUIRED),
    field("fingerprintVersion", "integer", REQUIRED),
    field("acceptedAt", "string", REQUIRED),
    field("migrationId", "string", REQUIRED),
    field("effectIds", "array of strings", REQUIRED),
    field("effects", "array of objects", REQUIRED),
];

const COMMAND_EXAMPLE: &str = r#""environment":"emulator","callerScopeKind":"member","callerId":"member_42","commandId":"3f2504e0-4f89-41d3-9a0c-0305e82c3301","commandType":"checkout","endpointSchemaVersion":1,"payload":{"sku":"tee","quantity":1}"#;
const LEASE_EXAMPLE: &str = r#""leaseId":"9b2d7c1e-3a4f-4e5b-8c6d-7e8f9a0b1c2d""#;
const REFERENCE_EXAMPLE: &str = r#""terminalReferenceFingerprint":"50d0c3665b69d55462d75fc9d8023325b7bb136cbca311ebd4a4c09d0fd96b24""#;
const PLAN_EXAMPLE: &str = r#"{"family":"store_purchase","fingerprintVersion":5,"effects":[{"seat_id":"seat-1","target_seat_id":"seat-1","actor_seat_id":"seat-1","mechanism":"WALLET","amount":"12.50","account_type":"checking","type":"STORE_PURCHASE","policy_id":"policy-1"}],"intent":{"policyUuid":"6f1c2a3b-4d5e-4f60-8a7b-9c0d1e2f3a4b","quantity":1}}"#;
const PROVIDER_PLAN_EXAMPLE: &str = r#"{"provider":"stripe","account":"acct_1Nv0FGQ9RKHgCVdK","mode":"test","apiVersion":"2024-06-20","operation":"charge","endpoint":"POST /v1/payment_intents","parameters":{"amount":1250,"currency":"usd"},"keyRetentionSeconds":86400,"lookup":"durable","lookupSettleSeconds":300}"#;
const RESULT_EXAMPLE: &str =
    r#""result":{"id":"pi_3Nv0FG","amount":1250,"currency":"usd","status":"succeeded"}"#;
const LEDGER_KEY_EXAMPLE: &str = r#""classId":"class-1","featCode":"STORE_PURCHASE","idempotencyKey":"order-1001","scope":{"seatId":"seat-1","actorSeatId":"seat-1"}"#;
const HISTORICAL_EXAMPLE: &str = r#""historical":{"family":"store_purchase","fingerprint":"50d0c3665b69d55462d75fc9d8023325b7bb136cbca311ebd4a4c09d0fd96b24","fingerprintVersion":5,"acceptedAt":"2025-06-01T12:00:00Z","migrationId":"seat-ownership-2025","effectIds":["legacy-row-1"],"effects":[{"seat_id":"seat-1","target_seat_id":"seat-1","actor_seat_id":"seat-1","mechanism":"WALLET","amount":"12.50","account_type":"checking","type":"STORE_PURCHASE","policy_id":"policy-1"}]}"#;
const CHARGE_EXAMPLE: &str = r#""charge":{"family":"store_purchase","intent":{"policyUuid":"6f1c2a3b-4d5e-4f60-8a7b-9c0d1e2f3a4b","quantity":1}}"#;

impl Subject {
    /// The keys of its stdin object, in the order `--help` lists them.
    fn fields(self) -> Vec<Field> {
        let mut fields = Vec::new();
        match self {
            Self::Identity => {
                fields.extend(COMMAND);
                fields.push(field("leaseId", "string", OPTIONAL));
                fields.push(field("terminalReferenceFingerprint", "string", OPTIONAL));
                fields.push(field("operation", "string", OPTIONAL));
                fields.push(field("plan", "object", OPTIONAL));
                fields.push(field(
                    "attempt",
                    "integer",
                    "optional; needs operation or plan",
                ));
            }
            Self::Register | Self::Status => fields.extend(COMMAND),
            Self::Acquire | Self::Start => {
                fields.extend(COMMAND);
                fields.push(field("leaseId", "string", REQUIRED));
            }
            Self::Complete | Self::Fail => {
                fields.extend(COMMAND);
                fields.push(field("leaseId", "string", REQUIRED));
                fields.push(field("expectedFenceEpoch", "integer", REQUIRED));
                if self == Self::Complete {
                    fields.push(field("terminalReferenceFingerprint", "string", REQUIRED));
                }
            }
            Self::SendBegin | Self::ProviderAnswer | Self::SendReconcile => {
                fields.extend(COMMAND);
                fields.push(field("leaseId", "string", REQUIRED));
                fields.push(field("expectedFenceEpoch", "integer", REQUIRED));
                fields.push(field("plan", "object", REQUIRED));
                match self {
                    Self::SendBegin => {}
                    _ => {
                        fields.push(field("attempt", "integer", REQUIRED));
                        let answer = if self == Self::ProviderAnswer {
                            "outcome"
                        } else {
                            "evidence"
                        };
                        fields.push(field(answer, "string", REQUIRED));
                        fields.push(field(
                            "terminalReferenceFingerprint",
                            "string",
                            "with succeeded: exactly one of this and result; absent otherwise",
                        ));
                        fields.push(field(
                            "result",
                            "object",
                            "with succeeded: exactly one of this and terminalReferenceFingerprint (a result envelope, stored with the success); absent otherwise",
                        ));
                    }
                }
            }
            Self::LedgerFingerprint => fields.extend(PLAN),
            Self::LedgerAccept => {
                fields.extend(LEDGER_KEY);
                fields.push(field("plan", "object", REQUIRED));
            }
            Self::LedgerReplay => {
                fields.extend(LEDGER_KEY);
                fields.push(field("charge", "object", "exactly one of charge, reversal"));
                fields.push(field(
                    "reversal",
                    "object",
                    "exactly one of charge, reversal",
                ));
            }
            Self::LedgerLink => {
                fields.extend(LEDGER_KEY);
                fields.push(field("historical", "object", REQUIRED));
            }
        }
        fields
    }

    /// The top-level keys its stdin object may have.
    pub fn keys(self) -> Vec<&'static str> {
        self.fields().iter().map(|f| f.name).collect()
    }

    /// The journal operation the subcommand runs; `None` for the offline ones.
    pub fn operation(self) -> Option<OperationName> {
        Some(match self {
            Self::Identity | Self::LedgerFingerprint => return None,
            Self::Register => OperationName::Register,
            Self::Acquire => OperationName::Acquire,
            Self::Start => OperationName::Start,
            Self::Complete => OperationName::Complete,
            Self::Fail => OperationName::Fail,
            Self::Status => OperationName::Status,
            Self::SendBegin => OperationName::BeginSend,
            Self::ProviderAnswer => OperationName::RecordSendOutcome,
            Self::SendReconcile => OperationName::ReconcileSend,
            Self::LedgerAccept => OperationName::LedgerAccept,
            Self::LedgerReplay => OperationName::LedgerReplay,
            Self::LedgerLink => OperationName::LedgerLink,
        })
    }

    /// The subcommand's words: an operation's come from the one operation list
    /// (`OperationName::command_words`).
    pub fn name(self) -> &'static str {
        match self.operation() {
            Some(op) => op.command_words().unwrap_or(op.label()),
            None if self == Self::LedgerFingerprint => "ledger fingerprint",
            None => "identity",
        }
    }

    /// The command line that runs it, as an operator types it.
    fn command_line(self) -> &'static str {
        match self {
            Self::Identity => "command-journal identity",
            Self::Register => "command-journal register --project demo-project",
            Self::Acquire => "command-journal acquire --project demo-project",
            Self::Start => "command-journal start --project demo-project",
            Self::Complete => "command-journal complete --project demo-project",
            Self::Fail => "command-journal fail --project demo-project",
            Self::Status => "command-journal status --project demo-project",
            Self::SendBegin => "command-journal send begin --project demo-project",
            Self::ProviderAnswer => "command-journal send outcome --project demo-project",
            Self::SendReconcile => "command-journal send reconcile --project demo-project",
            Self::LedgerFingerprint => "command-journal ledger fingerprint",
            Self::LedgerAccept => "command-journal ledger accept --project demo-project",
            Self::LedgerReplay => "command-journal ledger replay --project demo-project",
            Self::LedgerLink => "command-journal ledger link --project demo-project",
        }
    }

    /// A complete stdin object that works when pasted (in the order the notes give).
    pub fn example(self) -> String {
        match self {
            Self::Identity => format!(r#"{{{COMMAND_EXAMPLE},"operation":"charge"}}"#),
            Self::Register | Self::Status => format!("{{{COMMAND_EXAMPLE}}}"),
            Self::Acquire | Self::Start => format!("{{{COMMAND_EXAMPLE},{LEASE_EXAMPLE}}}"),
            Self::Complete => format!(
                r#"{{{COMMAND_EXAMPLE},{LEASE_EXAMPLE},"expectedFenceEpoch":1,{REFERENCE_EXAMPLE}}}"#
            ),
            Self::Fail => {
                format!(r#"{{{COMMAND_EXAMPLE},{LEASE_EXAMPLE},"expectedFenceEpoch":1}}"#)
            }
            Self::SendBegin => format!(
                r#"{{{COMMAND_EXAMPLE},{LEASE_EXAMPLE},"expectedFenceEpoch":1,"plan":{PROVIDER_PLAN_EXAMPLE}}}"#
            ),
            Self::ProviderAnswer => format!(
                r#"{{{COMMAND_EXAMPLE},{LEASE_EXAMPLE},"expectedFenceEpoch":1,"plan":{PROVIDER_PLAN_EXAMPLE},"attempt":1,"outcome":"succeeded",{RESULT_EXAMPLE}}}"#
            ),
            Self::SendReconcile => format!(
                r#"{{{COMMAND_EXAMPLE},{LEASE_EXAMPLE},"expectedFenceEpoch":1,"plan":{PROVIDER_PLAN_EXAMPLE},"attempt":1,"evidence":"not_found"}}"#
            ),
            Self::LedgerFingerprint => PLAN_EXAMPLE.to_owned(),
            Self::LedgerAccept => format!(r#"{{{LEDGER_KEY_EXAMPLE},"plan":{PLAN_EXAMPLE}}}"#),
            Self::LedgerReplay => format!("{{{LEDGER_KEY_EXAMPLE},{CHARGE_EXAMPLE}}}"),
            Self::LedgerLink => format!("{{{LEDGER_KEY_EXAMPLE},{HISTORICAL_EXAMPLE}}}"),
        }
    }

    /// What it prints on success, and what must run before the example.
    fn notes(self) -> &'static str {
        match self {
            Self::Identity => {
                "Prints commandKeyHash, payloadFingerprint and canonicalPayload, plus \
                 leaseOwnerFingerprint, terminalCommitmentHash and providerIdempotencyKey \
                 when leaseId, terminalReferenceFingerprint and operation are given, and \
                 planFingerprint when plan is given (the plan object of `send begin`: \
                 compare it with status's send.planFingerprint). providerIdempotencyKey is \
                 attempt 1's key (the one the first permit prints); with attempt N it is \
                 attempt N's, the key `send begin` permits once attempt N - 1 was recorded \
                 absent, of operation or else of the plan's operation (with both, operation \
                 must be the plan's). Needs no Firestore."
            }
            Self::Register => {
                "Prints {journalSchemaVersion, outcome: registered_new | registered_existing, \
                 state}."
            }
            Self::Acquire => {
                "Run register first. Prints outcome lease_acquired with fenceEpoch and \
                 leaseExpiresAt, or lease_busy, terminal_succeeded, terminal_failed_final. \
                 Use one fresh leaseId per worker attempt."
            }
            Self::Start => {
                "Registers the command if it is new and acquires its lease, in one read and \
                 one commit for a new command; otherwise exactly register then acquire. \
                 Prints {registration: <register's output>, lease: <acquire's output>}. \
                 Use one fresh leaseId per worker attempt."
            }
            Self::Complete => {
                "Run register and acquire (or start) first; expectedFenceEpoch is the fenceEpoch \
                 acquire printed. Prints outcome terminal_succeeded."
            }
            Self::Fail => {
                "Run register and acquire first (on a command not yet completed); \
                 expectedFenceEpoch is the fenceEpoch acquire printed. Prints outcome \
                 terminal_failed_final."
            }
            Self::Status => {
                "Prints {commandRevision, fenceEpoch, journalSchemaVersion, leaseActive, state}, \
                 plus, once a provider plan is bound (`send begin`), send: {absenceProvableFrom, \
                 attempt, needsReconciliation, planFingerprint, sendCutoffAt, state} \
                 (planFingerprint: the bound plan's, as identity prints it for a plan; \
                 sendCutoffAt: {nanoseconds, seconds}; absenceProvableFrom: while the outcome \
                 is unknown, from when `send reconcile` accepts not_found, else null). Keys \
                 print sorted."
            }
            Self::SendBegin => {
                "Run register and acquire (or start) first; expectedFenceEpoch is the fenceEpoch \
                 acquire printed. Records the attempt as sending BEFORE you call the provider and \
                 prints {attempt, journalSchemaVersion, leaseExpiresAt, outcome: send_permitted, \
                 providerIdempotencyKey, resend, sendCutoffAt} (times as {nanoseconds, seconds}): \
                 send with exactly that key, and never at or after leaseExpiresAt. The first call \
                 binds the plan for ever; another plan is plan_conflict (exit 3) before any \
                 other rule, the cutoff's included. A terminal command prints its terminal \
                 outcome. At or after sendCutoffAt with the outcome unknown: send_cutoff_passed \
                 (exit 3), do not send, reconcile. plan keys: provider, account, mode, \
                 apiVersion, operation, endpoint, parameters, keyRetentionSeconds (required), \
                 lookup (key_store | durable, default key_store), lookupSettleSeconds \
                 (default 300) and customerWindowSeconds (optional: the customer must act \
                 by firstSentAt plus it, the permit's actBy, printed when before \
                 sendCutoffAt)."
            }
            Self::ProviderAnswer => {
                "After the provider answered the send of `send begin`'s attempt, by the holder \
                 whose fence sent it last (another fence: attempt_mismatch), with the plan \
                 `send begin` bound (another plan: plan_conflict, before any other rule). \
                 succeeded (with terminalReferenceFingerprint, or with result: a result \
                 envelope, stored with the success) or declined ends the command and prints \
                 its terminal output {journalSchemaVersion, lifecycleSchemaVersion, outcome: \
                 terminal_succeeded | terminal_failed_final, state: succeeded | \
                 failed_final}, also after sendCutoffAt while the lease is active; ambiguous \
                 (timeout, 5xx, connection lost) prints {attempt, journalSchemaVersion, \
                 outcome: send_ambiguous}, and at or after sendCutoffAt is send_cutoff_passed; \
                 replayed_unknown (the provider replayed a stored unknown for the key) prints \
                 the same and the key is never sent again: reconcile it. \
                 Refusals exit 3 and write nothing."
            }
            Self::SendReconcile => {
                "For a holder of the lease (acquire first), with the plan `send begin` bound \
                 (another plan: plan_conflict, before any other rule) and verified provider \
                 evidence about an attempt whose outcome is unknown: succeeded (with \
                 terminalReferenceFingerprint, or with result: a result envelope, stored with \
                 the success) or declined ends the command at any time and prints its terminal \
                 output; not_found prints {attempt, journalSchemaVersion, outcome: \
                 send_absent}, after which `send begin` opens attempt + 1 with a new key. \
                 not_found is accepted only once the journal can prove the absence (the \
                 sender's lease ended, then lookupSettleSeconds; with lookup key_store, \
                 before firstSentAt + keyRetentionSeconds): otherwise absence_not_provable \
                 (exit 3, nothing written) with provableFrom, {nanoseconds, seconds} from \
                 when it will be, or null: never, settle it with succeeded or declined \
                 evidence from the provider's records (docs/providers.md, \"Operator \
                 procedure\")."
            }
            Self::LedgerFingerprint => {
                "Prints {fingerprint, fingerprintVersion, canonical}: canonical is the exact \
                 text hashed. Needs no Firestore."
            }
            Self::LedgerAccept => {
                "Prints outcome accepted (or replayed on a retry), the reservation and its \
                 effects. plan is the object `ledger fingerprint` reads."
            }
            Self::LedgerReplay => {
                "Run `ledger accept` first. Prints outcome replayed, or {outcome: \
                 not_reserved, reservationId}. charge.intent is the intent object of \
                 `ledger fingerprint`."
            }
            Self::LedgerLink => {
                "Links historical_unlinked rows that already exist in ledgerTransactions \
                 (by document id, in accepted order) to a new reservation, once: each row's \
                 monetary content must equal the proven effect. Prints outcome linked, or \
                 already_linked on an exact repeat. The example's rows must exist first \
                 (docs/ledger.md, \"Linking historical effects\", gives the procedure)."
            }
        }
    }

    /// The `--help` text: every key with its type, presence and rule, and the example.
    pub fn help(self) -> String {
        let mut text = String::from(
            "Stdin: one JSON object; each key at most once, no other keys \
             (invalid_input names the key, the problem and what it expects).\n",
        );
        for field in self.fields() {
            let rule = expected_for(field.name).unwrap_or("see docs/cli.md");
            text += &format!(
                "  {:<30} {}, {}\n      {rule}\n",
                field.name, field.kind, field.presence
            );
        }
        if self == Self::LedgerFingerprint {
            let mut effect_keys = V4_EFFECT_KEYS.to_vec();
            effect_keys.push(COMPENSATION_SUBTYPE_KEY);
            text += &format!(
                "  effect keys: {}\n  transfer keys: {}\n",
                effect_keys.join(", "),
                TRANSFER_KEYS.join(", ")
            );
        }
        if self == Self::LedgerLink {
            text += "  historical keys (all required):\n";
            for field in HISTORICAL {
                let rule = expected_for(field.name).unwrap_or("see docs/cli.md");
                text += &format!("    {:<28} {}\n      {rule}\n", field.name, field.kind);
            }
        }
        text += &format!("\n{}\n", self.notes());
        let uses_firestore = !matches!(self, Self::Identity | Self::LedgerFingerprint);
        text += if uses_firestore {
            "\nExample (with FIRESTORE_EMULATOR_HOST set, e.g. by `command-journal emulator`):\n"
        } else {
            "\nExample:\n"
        };
        text += &format!("  echo '{}' | {}\n", self.example(), self.command_line());
        text += &format!(
            "\n`command-journal example {}` prints the example object alone.",
            self.name()
        );
        text
    }
}

#[cfg(test)]
mod tests {
    use super::Subject;

    const ALL: [Subject; 14] = [
        Subject::SendBegin,
        Subject::ProviderAnswer,
        Subject::SendReconcile,
        Subject::Identity,
        Subject::Register,
        Subject::Acquire,
        Subject::Start,
        Subject::Complete,
        Subject::Fail,
        Subject::Status,
        Subject::LedgerFingerprint,
        Subject::LedgerAccept,
        Subject::LedgerReplay,
        Subject::LedgerLink,
    ];

    #[test]
    fn every_example_is_one_object_of_exactly_the_documented_keys() {
        for subject in ALL {
            let example = subject.example();
            let map = crate::strict_json::parse_object(&example).expect("object");
            let keys = subject.keys();
            for key in map.keys() {
                assert!(keys.contains(&key.as_str()), "{subject:?}: {key}");
            }
            assert!(subject.help().contains(&example), "{subject:?}");
            assert!(!example.contains('\''), "{subject:?} must paste inside ''");
        }
    }

    #[test]
    fn every_operation_subcommand_is_named_by_the_operation_list() {
        use command_journal_core::tools::transaction::OperationName;
        for op in OperationName::ALL {
            let subjects: Vec<_> = ALL.iter().filter(|s| s.operation() == Some(op)).collect();
            match op.command_words() {
                Some(words) => {
                    assert_eq!(subjects.len(), 1, "{op:?}");
                    assert_eq!(subjects[0].name(), words, "{op:?}");
                }
                None => assert!(subjects.is_empty(), "{op:?} has no subcommand"),
            }
        }
        // Each name is a subcommand path the parser knows.
        let command = <crate::cli::args::Args as clap::CommandFactory>::command();
        for subject in ALL {
            let mut level = &command;
            for word in subject.name().split(' ') {
                level = level
                    .find_subcommand(word)
                    .unwrap_or_else(|| panic!("{subject:?}: no subcommand {word}"));
            }
        }
    }

    #[test]
    fn every_documented_key_has_a_rule() {
        for subject in ALL {
            let help = subject.help();
            assert!(!help.contains("see docs/cli.md"), "{subject:?}: {help}");
        }
    }
}
