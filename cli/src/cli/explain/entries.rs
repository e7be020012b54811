//! The table `explain` prints: every error code and verify finding code, what it means
//! and what to do about it.

use super::entry::{Entry, error, finding};
use crate::cli::exit::Exit;

/// What to do about a finding that only an edit outside the journal explains.
const INVESTIGATE: &str = "Find who wrote the document outside the journal (an edit, a \
                           deletion, a restore); never repair by hand.";

/// Every code, errors first (in the order of `JournalError`, then the CLI's own),
/// then the verify findings.
pub const ENTRIES: &[Entry] = &[
    error(
        "invalid_input",
        "input",
        Exit::Input,
        "An input key or option failed validation. The answer names it (`field`, never its \
         value), says what is wrong (`problem`: `missing`, `invalid`, `unknown`, \
         `duplicate`, or for stdin as a whole `empty`, `malformed_json`, `not_an_object`) \
         and what it expects (`expected`).",
        "Fix the input as `expected` says; `command-journal example <subcommand>` prints a \
         working object. Nothing was written.",
    ),
    error(
        "command_conflict",
        "refused",
        Exit::Refused,
        "The command id is already registered for this caller and command type with a \
         different payload.",
        "A client reused a command id for another request: give the new request a new \
         command id. The same call always gets the same answer.",
    ),
    error(
        "not_registered",
        "refused",
        Exit::Refused,
        "The command has no registration (in this project and database).",
        "Register it (or use `start`) first; check --project and --database.",
    ),
    error(
        "lease_not_held",
        "refused",
        Exit::Refused,
        "Another lease id holds the command's lease, or this one never held it.",
        "Stop this worker and do not call the provider: another worker owns the command.",
    ),
    error(
        "stale_fence",
        "refused",
        Exit::Refused,
        "The expected fence epoch is not the command's current one: the lease was taken \
         over after this holder's expired.",
        "Stop this worker: its attempt is over, and the new holder finishes the command.",
    ),
    error(
        "lease_expired",
        "refused",
        Exit::Refused,
        "The caller's lease expired (now is at or after its expiry) before it recorded \
         the outcome.",
        "Record nothing; the next holder takes over with the fence plus one and sends \
         with the same provider idempotency key.",
    ),
    error(
        "terminal_conflict",
        "refused",
        Exit::Refused,
        "A different terminal outcome or terminal reference is already recorded; terminal \
         state is write-once.",
        "The recorded outcome stands (`status` shows it); find out why two outcomes were \
         reported.",
    ),
    error(
        "clock_regression",
        "refused",
        Exit::Refused,
        "The trusted clock reads earlier than a time stored on the command.",
        "Check the host's clock (or `--at`); the call succeeds once the clock has passed \
         the stored time.",
    ),
    error(
        "revision_overflow",
        "refused",
        Exit::Refused,
        "A fence epoch or command revision would exceed its bound.",
        "The command cannot move further; investigate what took it over so often.",
    ),
    error(
        "journal_corrupt",
        "refused",
        Exit::Refused,
        "A stored document broke an invariant (the message names which, as a fixed text); \
         nothing was written.",
        "Run `command-journal verify` and investigate; never repair by hand.",
    ),
    error(
        "replay_mismatch",
        "refused",
        Exit::Refused,
        "A ledger retry does not match its accepted reservation: another plan, fingerprint \
         version or business tuple under the same key.",
        "The key holds another command: a new ledger command needs a new idempotency key.",
    ),
    error(
        "scope_mismatch",
        "refused",
        Exit::Refused,
        "A ledger replay named a seat or actor outside the reservation's scope.",
        "Replay with the reservation's own scope.",
    ),
    error(
        "unsupported_fingerprint_version",
        "refused",
        Exit::Refused,
        "The stored reservation's fingerprint version (1 to 3) has no serializer in this \
         crate.",
        "The reservation cannot be replayed here; migrate it (docs/ledger.md).",
    ),
    error(
        "reversal_exceeds_original",
        "refused",
        Exit::Refused,
        "A new reversal would return more than an original effect booked: with the \
         reversals of it already accepted, under any key, the magnitudes of their amounts \
         would exceed the magnitude of the original's amount. Nothing was written.",
        "Reverse at most what remains (the original's correction bound, \
         ledgerTransactions/{id}/corrections/current, holds what was reversed); an \
         accepted reversal's exact retry still replays.",
    ),
    error(
        "obsolete_multi_effect_fingerprint",
        "refused",
        Exit::Refused,
        "A version 1 or 2 historical command with more than one effect cannot be linked: \
         its fingerprint covers principal material that version 3 removed.",
        "Do not link it; its disposition is a separate decision (docs/ledger.md).",
    ),
    error(
        "send_cutoff_passed",
        "refused",
        Exit::Refused,
        "The attempt's outcome is unknown and its stored send cutoff has passed (or its \
         send time is unknown, or its provider replayed a stored unknown answer for the \
         key): no permit for anyone, and no ambiguous outcome from the sender (a success \
         or decline is still recorded).",
        "Do not send. Ask the provider what became of the key and record it with `send \
         reconcile`.",
    ),
    error(
        "resend_not_yet",
        "refused",
        Exit::Refused,
        "Another holder sent the attempt last and its request may still be on its way to \
         the provider until the lease it was sent under would have ended (`lastSentAt` + \
         60 s, even when that lease was released sooner): no re-send of the key before \
         `resendFrom`. Nothing was written.",
        "Retry at or after `resendFrom` (the same key is re-sent then); a provider's \
         answer for the key may settle the command sooner.",
    ),
    error(
        "plan_conflict",
        "refused",
        Exit::Refused,
        "The command is bound to a different provider plan: checked before every other \
         rule of a send operation, the cutoff included.",
        "Send the plan the command was first bound to (`identity` with the plan prints \
         its planFingerprint; `status` shows the bound one); another plan is another \
         command.",
    ),
    error(
        "send_outcome_required",
        "refused",
        Exit::Refused,
        "The command has a bound provider plan: it ends only through `send outcome` or \
         `send reconcile`.",
        "Record the provider's answer through the send layer.",
    ),
    error(
        "attempt_mismatch",
        "refused",
        Exit::Refused,
        "The attempt named is not the command's current one, is no longer open for this \
         answer, or was not sent by the caller's fence.",
        "Read `status`; answer the current attempt, as its holder.",
    ),
    error(
        "absence_not_provable",
        "refused",
        Exit::Refused,
        "The provider's \"not found\" cannot be proven from the journal's records: it is \
         before `provableFrom` (the attempt's last permit, plus 60 s for a lease that \
         permitted it to end, plus the plan's settle window), or the provider may have \
         forgotten the key. Nothing was written; \
         `provableFrom` says when the same evidence will be accepted (null: never).",
        "Look the key up again at or after `provableFrom`; with null, settle it from the \
         provider's records (docs/providers.md, \"Operator procedure\").",
    ),
    error(
        "unavailable",
        "unavailable",
        Exit::Unavailable,
        "Firestore could not be reached, kept aborting for 10 attempts, or the operation's \
         deadline passed. The answer names the host, the last gRPC code and the attempts \
         made.",
        "Retry the whole call later: every operation is idempotent.",
    ),
    error(
        "credentials_unavailable",
        "configuration",
        Exit::Configuration,
        "No usable Application Default Credentials (decided without a network call).",
        "Set GOOGLE_APPLICATION_CREDENTIALS, run `gcloud auth application-default login`, \
         or run on Google Cloud with a service account; for the emulator, set \
         FIRESTORE_EMULATOR_HOST or pass --emulator-host.",
    ),
    error(
        "permission_denied",
        "configuration",
        Exit::Configuration,
        "Firestore refused the credentials (UNAUTHENTICATED) or they lack permission on the \
         database (PERMISSION_DENIED).",
        "Grant the service account roles/datastore.user on the project, or refresh expired \
         credentials; retrying does not help.",
    ),
    error(
        "not_configured",
        "configuration",
        Exit::Configuration,
        "The target is not usable: the project or database does not exist, it is not a \
         Firestore Native database, the request was invalid for it, or no project id was \
         found (`cause` says which).",
        "Check --project and --database (GOOGLE_CLOUD_PROJECT, FIRESTORE_DATABASE) and the \
         database's mode.",
    ),
    error(
        "internal",
        "internal",
        Exit::Internal,
        "A defect inside this process (an output that failed to serialize, a worker task \
         that panicked); nothing about the journal is implied.",
        "Report it with the command line that caused it; retrying does not help.",
    ),
    error(
        "emulator_unavailable",
        "unavailable",
        Exit::Unavailable,
        "The CLI could not start the Firestore emulator: Java or the emulator jar is \
         missing, or the JVM exited or did not answer in time (stderr says which).",
        "Install Java (default-jre-headless) and google-cloud-cli-firestore-emulator, or \
         point FIRESTORE_EMULATOR_HOST at a running emulator (docs/emulator.md).",
    ),
    error(
        "address_unavailable",
        "input",
        Exit::Input,
        "`emulator --host/--port` named an address that cannot be listened on: the port is \
         in use, or the address is not this machine's.",
        "Choose another --port, or none for a free one.",
    ),
    error(
        "rules_do_not_compile",
        "input",
        Exit::Input,
        "`rules check` was given a ruleset the emulator does not compile; `message` is the \
         emulator's.",
        "Fix the ruleset at the line the message names.",
    ),
    finding(
        "malformed_document",
        "A journal document fails its strict codec (fields, types, enums, relations).",
        INVESTIGATE,
    ),
    finding(
        "unexpected_document",
        "A document where the journal keeps none: a stray id or a document in a \
         subcollection the journal never writes.",
        "Find what wrote it there; the journal's collections hold only its own documents.",
    ),
    finding(
        "orphan_lifecycle",
        "A lifecycle whose registration root does not exist.",
        INVESTIGATE,
    ),
    finding(
        "orphan_audit_event",
        "An audit event whose registration root does not exist.",
        INVESTIGATE,
    ),
    finding(
        "missing_registration_event",
        "A registration root without its revision-1 audit event.",
        INVESTIGATE,
    ),
    finding(
        "registration_mismatch",
        "The revision-1 event disagrees with its root (environment, scope kind, type, \
         time).",
        INVESTIGATE,
    ),
    finding(
        "lifecycle_without_current_event",
        "A lifecycle without the audit event of its current revision.",
        INVESTIGATE,
    ),
    finding(
        "lifecycle_event_mismatch",
        "The lifecycle's current audit event disagrees with it (type, fence, expiry, time).",
        INVESTIGATE,
    ),
    finding(
        "audit_gap",
        "A revision below the lifecycle's current one has no audit event.",
        INVESTIGATE,
    ),
    finding(
        "extra_audit_event",
        "An audit event beyond the lifecycle's current revision.",
        INVESTIGATE,
    ),
    finding(
        "fence_not_incremented",
        "A takeover that did not raise the fence by exactly one, or a terminal event at \
         another fence than the lease it ended.",
        INVESTIGATE,
    ),
    finding(
        "changed_after_terminal",
        "An event recorded after the command's terminal event.",
        INVESTIGATE,
    ),
    finding(
        "timestamp_regression",
        "Times that run backwards along the event chain, or before the registration.",
        "Check the writers' clocks, then look for edits outside the journal.",
    ),
    finding(
        "reservation_missing_effects",
        "A ledger reservation whose listed effect rows are missing or do not link back to \
         it.",
        INVESTIGATE,
    ),
    finding(
        "canonical_effect_without_reservation",
        "A canonical ledger effect row without the reservation that lists it.",
        INVESTIGATE,
    ),
    finding(
        "lineage_violation",
        "A ledger effect row whose lineage fields break the lineage rules.",
        INVESTIGATE,
    ),
    finding(
        "broken_historical_link",
        "An imported historical row and the reservation linking it disagree: either names \
         the other at another reservation, index or migration, or not at all.",
        "Re-run the migration's `ledger link` for that command, or investigate the edit \
         (docs/ledger.md).",
    ),
    finding(
        "duplicate_monetary_effect",
        "A row a migration created holds the same money as an imported row: one monetary \
         effect represented twice.",
        "Decide which row stands with whoever owns the ledger; never delete by hand \
         without that decision.",
    ),
    finding(
        "event_root_mismatch",
        "A transition event disagrees with its root (environment, caller scope kind, \
         command type or command key hash).",
        INVESTIGATE,
    ),
    finding(
        "lease_duration_mismatch",
        "An acquisition or takeover event whose lease does not run exactly 60 s.",
        INVESTIGATE,
    ),
    finding(
        "overlapping_lease",
        "A takeover recorded before the lease it took over had expired: two holders \
         active at once.",
        INVESTIGATE,
    ),
    finding(
        "terminal_lease_mismatch",
        "A terminal event that does not carry the lease it ended, or occurred at or after \
         that lease's expiry.",
        INVESTIGATE,
    ),
    finding(
        "lifecycle_history_mismatch",
        "The lifecycle disagrees with the events of the revisions it summarises (its \
         creation, the current lease's acquisition and expiry).",
        INVESTIGATE,
    ),
    finding(
        "effect_fingerprint_mismatch",
        "A reservation whose stored fingerprint differs from the one rebuilt from its \
         stored effect rows.",
        "An effect row's money was edited: investigate before any replay relies on it.",
    ),
    finding(
        "effect_integrity_mismatch",
        "A reservation whose stored integrity digest differs from the one computed over \
         its stored effect rows.",
        "An effect row was edited: investigate before any replay relies on it.",
    ),
    finding(
        "over_reversal",
        "The reversals of one effect return more than it booked: the magnitudes of the \
         amounts of every reversal effect naming it, or its correction bound's total, \
         exceed the magnitude of its amount (reported at the original row).",
        "Money was returned twice: a correction bound was deleted or edited, or a \
         reversal written around the journal; investigate and settle it with the \
         bookkeeper, never by editing the rows.",
    ),
    finding(
        "correction_bound_mismatch",
        "An effect's correction bound (ledgerTransactions/{id}/corrections/current) or \
         its log (corrections/{position}) disagrees with the reversals whose commits \
         counted it: the bound is missing while such a reversal names the effect or \
         entries remain, its total or count is not theirs, the log is not one entry per \
         such reversal effect ending at the bound's totals, or its parent row does not \
         exist.",
        "The bound or its log was deleted or edited outside the journal: the next \
         reversal of the effect is refused (journal_corrupt) while the log contradicts \
         the bound, or bounded wrongly if both were removed; investigate before \
         accepting reversals of it.",
    ),
    finding(
        "fixed_field_violation",
        "A canonical reservation of schema version 3 has an effect row breaking the \
         fields seed 003 fixes: a mechanism outside WALLET, FEE, REVERSAL or null, or \
         compensation cents, locators or a subtype on an effect that is not a \
         reversal's compensating one.",
        "Its acceptance refused such rows, so a row was edited: every replay of the \
         command answers journal_corrupt; investigate, never repair by hand.",
    ),
    finding(
        "rewritten_document",
        "A document the journal creates once and never changes has a Firestore update \
         time other than its create time: it was written again outside the journal.",
        INVESTIGATE,
    ),
    finding(
        "commit_time_mismatch",
        "Documents the journal writes in one commit have different commit times, or audit \
         events were created out of revision order.",
        "A document was deleted and written again, or written outside the journal; a \
         copied database (an import) shows this too.",
    ),
    finding(
        "orphan_send_record",
        "A provider-send plan or send record whose root does not exist.",
        INVESTIGATE,
    ),
    finding(
        "malformed_send_document",
        "A send document or send event fails its strict codec.",
        INVESTIGATE,
    ),
    finding(
        "unpaired_send_record",
        "A plan without its send record, the reverse, or send events without either.",
        INVESTIGATE,
    ),
    finding(
        "plan_not_immutable",
        "The provider plan was rewritten, or not created in the commit that opened \
         attempt 1.",
        INVESTIGATE,
    ),
    finding(
        "send_audit_gap",
        "A send revision below the current one has no send event.",
        INVESTIGATE,
    ),
    finding(
        "extra_send_event",
        "A send event beyond the send record's current revision.",
        INVESTIGATE,
    ),
    finding(
        "send_chain_mismatch",
        "The send events do not replay from nothing to the current send record.",
        INVESTIGATE,
    ),
    finding(
        "send_cutoff_mismatch",
        "A send cutoff that is not `firstSentAt + r - floor(r/4)`, changes within an \
         attempt, or a re-send or a sender's ambiguous outcome recorded at or after it (a \
         sender's success or decline, and reconciliation, may follow it).",
        INVESTIGATE,
    ),
    finding(
        "send_lifecycle_mismatch",
        "The send layer and the lifecycle disagree (terminal state, time, fence).",
        INVESTIGATE,
    ),
    finding(
        "send_commit_time_mismatch",
        "Send commit times out of order, a send event rewritten, or the send record not \
         written by the commit of the last send event.",
        INVESTIGATE,
    ),
    finding(
        "absence_not_proven",
        "An attempt recorded absent outside the window in which the journal can prove an \
         absence (before its last permit plus 60 s plus the plan's settle window, or, for \
         a key-store provider, at or after its first permit plus the key retention).",
        INVESTIGATE,
    ),
    finding(
        "send_result_mismatch",
        "The send record's resultStored disagrees with the presence of results/current.",
        INVESTIGATE,
    ),
    finding(
        "orphan_result",
        "A result envelope (`results/current`) of a command that has not succeeded, or \
         that has no root.",
        INVESTIGATE,
    ),
    finding(
        "malformed_result",
        "A result envelope fails its strict codec, or its text is not exactly the \
         canonical form of a valid envelope.",
        "The stored result was edited outside the journal: every replay of the command now \
         answers `journal_corrupt` until it is investigated.",
    ),
    finding(
        "result_commitment_mismatch",
        "A result envelope that does not bind its lifecycle: its reference's commitment is \
         not the lifecycle's terminal commitment, or it was not created at the success's \
         time.",
        "The stored result was replaced outside the journal: every replay of the command \
         now answers `journal_corrupt` until it is investigated.",
    ),
    finding(
        "pending_index_mismatch",
        "A lifecycle in state `leased` that the pending listing's collection-group query \
         on `state` does not return, or a document it returns that is not a command's \
         leased lifecycle.",
        "`pending` and the recovery job would miss the command, or list a stray: check \
         the `lifecycle` collection group's `state` index and any single-field exemption \
         (`firestore.indexes.json`), then find who wrote the document.",
    ),
    finding(
        "malformed_recovery_checkpoint",
        "A recovery checkpoint (`recoveryCheckpoints/{index}-of-{count}`) that fails its \
         strict codec: a field added, missing or of another type, its key range not the \
         one its id names, or its position outside that range.",
        "Every recovery run of that key range fails on it (`journal_corrupt`, exit 1) and \
         settles nothing: find who wrote it; deleting it makes the next run start at the \
         range's start, which only costs lookups.",
    ),
    finding(
        "release_mismatch",
        "A lease release record (`leaseReleases/{fence}`) that fails its strict codec, was \
         rewritten, has no registration, or was released outside its fence's lease; or a \
         lifecycle that disagrees with the records (released without its record, at \
         another time, not in its commit; or still holding a released fence).",
        "The next lease operation on the command fails closed (`journal_corrupt`) where it \
         reads the disagreement; find who wrote or deleted the document.",
    ),
    finding(
        "write_after_release",
        "A terminal event by a fence that released its lease, or a send event by it after \
         its release.",
        "The journal refuses every such write: find who wrote the event; reconcile the \
         command with the provider before trusting its outcome.",
    ),
    finding(
        "malformed_evidence_checkpoint",
        "An evidence checkpoint (`evidenceCheckpoints/{digest of the feed's name}`) that \
         fails its strict codec: a field added, missing or of another type, or a \
         `listFrom` after its `recordedAt`.",
        "Every backfill run of that feed refuses on it (`journal_corrupt`, exit 1) and \
         takes no event: find who wrote it; deleting it makes the next run list its \
         default window again, which only costs reads.",
    ),
    finding(
        "late_charge_mismatch",
        "A late charge (`lateCharges/{attempt}`: a charge its command ended without) that \
         fails its strict codec, was rewritten, has no root or send record, names an \
         attempt after the current one, or gives a reason the attempt's recorded state \
         contradicts.",
        INVESTIGATE,
    ),
    finding(
        "provider_key_mismatch",
        "A provider key index document (`providerKeys/{digest of the key}`) that fails \
         its strict codec, was rewritten, names no command that opened an attempt, or \
         whose command's stored plan does not derive, at the attempt it names, the key \
         whose digest is its id.",
        "Evidence naming that key (a provider's event) fails on it (`journal_corrupt`) \
         and writes nothing; the command still settles by its client's retry or a \
         recovery's lookup. Find who wrote it.",
    ),
];
