//! What each input field accepts, as fixed text for `invalid_input` answers.
//!
//! An `invalid_input` error names the field it rejects; [`expected_for`] gives the
//! rule that field must follow, so a caller learns the allowed values from the error
//! itself. The texts are constants: they never contain the value that was received.

/// Every field name an `invalid_input` error of this crate can carry, with the rule
/// the field must follow.
const EXPECTED: &[(&str, &str)] = &[
    (
        "input",
        "one JSON object, each key at most once, with only the documented keys",
    ),
    (
        "project",
        "a project id: 1 to 100 characters of a-z, 0-9 and -",
    ),
    (
        "database",
        "a database id: (default), or 4 to 63 characters of a-z, 0-9 and -",
    ),
    (
        "at",
        "an RFC 3339 time such as 2030-01-01T00:00:00Z, only with an emulator target",
    ),
    ("environment", "one of emulator, test, staging, production"),
    (
        "ranges",
        "an integer number of verify scan ranges from 1 to 4096",
    ),
    ("callerScopeKind", "one of member, guest, officer, service"),
    ("callerId", "1 to 128 characters of A-Z, a-z, 0-9, _ and -"),
    ("commandId", "canonical lowercase UUID v4"),
    (
        "leaseId",
        "canonical lowercase UUID v4, different from commandId",
    ),
    (
        "commandType",
        "a lowercase slug: a-z, then up to 62 of a-z, 0-9 and _",
    ),
    (
        "operation",
        "a lowercase slug: a-z, then up to 62 of a-z, 0-9 and _ (identity with a plan: \
         the plan's operation)",
    ),
    ("endpointSchemaVersion", "an integer from 1 to 9999"),
    (
        "payload",
        "a JSON object of strings, booleans, nulls, integers within +-(2^53-1), arrays \
         and objects; at most 32 deep and 65536 bytes in canonical form; no fractions",
    ),
    (
        "expectedFenceEpoch",
        "a positive integer: the fenceEpoch the acquire answered",
    ),
    (
        "terminalReferenceFingerprint",
        "64 lowercase hex characters (a SHA-256 of the provider's reference)",
    ),
    (
        "classId",
        "1 to 1024 bytes of text without control characters",
    ),
    (
        "featCode",
        "1 to 1024 bytes of text without control characters",
    ),
    (
        "idempotencyKey",
        "1 to 1024 bytes of text without control characters",
    ),
    (
        "scope",
        "an object {seatId, actorSeatId}, each 1 to 1024 bytes of text without control \
         characters",
    ),
    (
        "family",
        "one of store_purchase, rent_payment, insurance_premium, overdraft_fee, reversal, \
         effect_plan, internal_transfer (a charge: one of the first four)",
    ),
    (
        "fingerprintVersion",
        "an integer fingerprint version: 5 for new commands (4 and 5 can be computed)",
    ),
    (
        "effects",
        "an array of 1 to 256 effect objects with the documented snake_case keys: texts \
         of 1 to 1024 bytes or null, amount a decimal string with at most 2 decimals, \
         compensation_amount_cents an integer from 0 to 2^53-1; null for internal_transfer; \
         a new command's mechanism null, WALLET, FEE or REVERSAL, and compensation cents, \
         locators and subtype only on a reversal's compensating effects",
    ),
    (
        "intent",
        "the family's intent object: store_purchase {policyUuid, quantity}, rent_payment \
         {obligationCorrelation, requestedPaymentAmount}, insurance_premium {entitlementId, \
         selectedObligationCorrelation}, overdraft_fee {forceAuthority}; null otherwise",
    ),
    (
        "transfer",
        "for internal_transfer only: an object with account_direction, target_seat_id, \
         actor_seat_id, amount (non-negative), type, original_transaction_id, policy_id",
    ),
    (
        "result",
        "a result envelope: a JSON object of strings, booleans, nulls, integers within \
         +-(2^53-1), arrays and objects; at most 32 deep and 16384 bytes in canonical form; \
         no fractions",
    ),
    (
        "plan",
        "ledger: a fingerprint input object: {family, fingerprintVersion, effects, intent} or \
         {family: internal_transfer, fingerprintVersion, transfer}; send begin: an object \
         {provider, account, mode, apiVersion, operation, endpoint, parameters, \
         keyRetentionSeconds, optional lookup, lookupSettleSeconds and \
         customerWindowSeconds} and no other key \
         (the same object for send outcome, send reconcile and identity)",
    ),
    (
        "charge",
        "an object {family, intent}, family one of store_purchase, rent_payment, \
         insurance_premium, overdraft_fee; give exactly one of charge and reversal",
    ),
    (
        "reversal",
        "an object {actorSeatId, mechanism, compensationSubtype}, each 1 to 1024 bytes \
         of text or null; give exactly one of charge and reversal",
    ),
    (
        "migrationId",
        "1 to 128 characters of A-Z, a-z, 0-9, _ and -",
    ),
    (
        "acceptedAt",
        "an RFC 3339 time no later than the trusted clock's now",
    ),
    (
        "effectIds",
        "an array of the document ids of existing historical_unlinked rows, one per \
         effect, in accepted order, none already linked",
    ),
    (
        "historical",
        "an object {family, fingerprint, fingerprintVersion, acceptedAt, migrationId, \
         effectIds, effects}",
    ),
    (
        "provider",
        "a lowercase slug: a-z, then up to 62 of a-z, 0-9 and _",
    ),
    (
        "account",
        "the provider account: 1 to 255 characters without control characters",
    ),
    ("mode", "one of test, live"),
    (
        "apiVersion",
        "1 to 64 printable ASCII characters without spaces",
    ),
    (
        "endpoint",
        "METHOD /path: one of GET, POST, PUT, PATCH, DELETE, one space, then an absolute \
         path of non-empty RFC 3986 segments (no . or .., no query or fragment, \
         %XX uppercase), at most 512 bytes in all",
    ),
    (
        "parameters",
        "a JSON object of strings, booleans, nulls, integers within +-(2^53-1), arrays \
         and objects; at most 32 deep and 65536 bytes in canonical form; no fractions",
    ),
    (
        "keyRetentionSeconds",
        "an integer from 3600 to 2592000: the provider's documented idempotency-key \
         retention in seconds",
    ),
    (
        "lookup",
        "one of key_store (the default: the provider answers lookups from its \
         idempotency-key store, which forgets keys after keyRetentionSeconds), durable \
         (a lookup over the provider's own records, such as a Stripe metadata search)",
    ),
    (
        "lookupSettleSeconds",
        "an integer from 0 to 86400 (default 300): the time the provider's lookup needs \
         to see a charge; with lookup key_store, 60 plus it at most a quarter of \
         keyRetentionSeconds",
    ),
    (
        "customerWindowSeconds",
        "an integer from 60 to keyRetentionSeconds minus a quarter of it (integer \
         division): how long a customer the provider waits for may act after the \
         attempt's first send (unset: until the attempt's cutoff)",
    ),
    (
        "attempt",
        "an integer from 1 to 9999: the attempt the send permit answered (identity: the \
         attempt whose key to print, with operation or plan)",
    ),
    (
        "outcome",
        "one of succeeded, declined, ambiguous (succeeded with exactly one of \
         terminalReferenceFingerprint and result)",
    ),
    (
        "feed",
        "an evidence feed's name: 1 to 256 characters of A-Z, a-z, 0-9, _, -, . and :",
    ),
    (
        "listFrom",
        "a Unix second from 0 to the journal's time: where the feed's next run lists from",
    ),
    (
        "evidence",
        "one of succeeded, declined, not_found (succeeded with exactly one of \
         terminalReferenceFingerprint and result)",
    ),
    ("concurrency", "one of preconditions, transaction"),
    ("recoverConcurrency", "a whole number from 1 to 64"),
    (
        "recoverPerSecond",
        "a whole number from 1 to 10000 (or no bound)",
    ),
    ("recoverLimit", "a whole number from 1 (or no limit)"),
    (
        "recoverDeadline",
        "a duration of at least one second (or no deadline)",
    ),
    ("keyRange", "INDEX/COUNT in decimal, such as 0/2"),
    (
        "keyRangeCount",
        "a whole number of key ranges from 1 to 10000",
    ),
    (
        "keyRangeIndex",
        "a whole number from 0 to the key range count minus one",
    ),
    ("fingerprint", "64 lowercase hex characters"),
    (
        "providerIdempotencyKey",
        "the provider idempotency key of an attempt of this command, derived from its \
         stored plan (identity prints it for an attempt)",
    ),
    (
        "nextAction",
        "a provider's name of a next action: 1 to 64 of a-z, 0-9 and _",
    ),
];

/// The fixed rule `field` must follow, for every field name an `invalid_input` error
/// of this crate can carry; `None` for a name the crate never reports.
pub fn expected_for(field: &str) -> Option<&'static str> {
    EXPECTED
        .iter()
        .find(|(name, _)| *name == field)
        .map(|(_, text)| *text)
}

#[cfg(test)]
mod tests {
    use super::{EXPECTED, expected_for};
    use crate::identity::{CallerScopeKind, Environment};
    use crate::ledger::fingerprint::CommandFamily;
    use std::path::Path;

    /// Every string literal passed as an `invalid_input` field anywhere in `src/`.
    fn reported_fields() -> Vec<String> {
        let mut fields = Vec::new();
        // Every package of the workspace reports fields: the core, the library and the CLI.
        let workspace = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        let mut stack: Vec<_> = ["core/src", "src", "cli/src", "harness/src"]
            .iter()
            .map(|dir| workspace.join(dir))
            .collect();
        while let Some(dir) = stack.pop() {
            for entry in std::fs::read_dir(&dir).expect("read src") {
                let path = entry.expect("entry").path();
                if path.is_dir() {
                    stack.push(path);
                    continue;
                }
                // Unit tests live in `tests.rs` files or in `tests/` directories.
                let is_test = path.file_name().is_some_and(|n| n == "tests.rs")
                    || path
                        .parent()
                        .and_then(Path::file_name)
                        .is_some_and(|n| n == "tests");
                if path.extension().is_none_or(|e| e != "rs") || is_test {
                    continue;
                }
                let text = std::fs::read_to_string(&path).expect("read source");
                let text = text.split("#[cfg(test)]").next().unwrap_or_default();
                for marker in [
                    "invalid(\"",
                    "InvalidInput { field: \"",
                    "const F: &str = \"",
                    "self.string(\"",
                    "self.integer(\"",
                    "self.value(\"",
                    "input.string(\"",
                    "input.integer(\"",
                    "input.value(\"",
                    "input.optional_string(\"",
                ] {
                    for piece in text.split(marker).skip(1) {
                        if let Some(end) = piece.find('"') {
                            fields.push(piece[..end].to_owned());
                        }
                    }
                }
                // Helpers whose last argument is the field: `object(v, keys, "f")`.
                for line in text.lines() {
                    let call = ["object(", "ledger_part(", "absent_or_null("]
                        .iter()
                        .find_map(|m| line.find(m).map(|at| &line[at..]));
                    if let Some(call) = call
                        && let Some(end) = call.find("\")")
                        && let Some(start) = call[..end].rfind('"')
                    {
                        fields.push(call[start + 1..end].to_owned());
                    }
                }
                // Closed enums name their field as the second macro argument.
                for piece in text.split("closed_enum!(").skip(1) {
                    if let Some(field) = piece.split('"').nth(1) {
                        fields.push(field.to_owned());
                    }
                }
            }
        }
        fields.sort();
        fields.dedup();
        fields
    }

    #[test]
    fn every_field_the_crate_reports_has_an_expected_text() {
        let fields = reported_fields();
        assert!(
            fields.len() >= 25,
            "the scan found too few fields: {fields:?}"
        );
        for field in [
            "environment",
            "callerScopeKind",
            "effects",
            "at",
            "project",
            "classId",
            "charge",
            "transfer",
        ] {
            assert!(fields.contains(&field.to_owned()), "scan missed {field}");
        }
        let missing: Vec<&String> = fields
            .iter()
            .filter(|f| expected_for(f).is_none())
            .collect();
        assert!(missing.is_empty(), "no expected text for {missing:?}");
    }

    #[test]
    fn names_are_distinct_and_texts_fixed() {
        let mut names: Vec<&str> = EXPECTED.iter().map(|(n, _)| *n).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), EXPECTED.len());
        assert_eq!(expected_for("nonexistent"), None);
        assert_eq!(
            expected_for("commandId"),
            Some("canonical lowercase UUID v4")
        );
    }

    #[test]
    fn closed_sets_list_exactly_the_values_the_parsers_accept() {
        let listed = |field: &str| -> Vec<String> {
            let text = expected_for(field).expect("text");
            let list = text.strip_prefix("one of ").expect("a list");
            let list = list.split(" (").next().unwrap_or(list);
            list.split(", ").map(str::to_owned).collect()
        };
        let environments = listed("environment");
        assert_eq!(environments.len(), 4);
        for value in &environments {
            assert_eq!(
                Environment::parse(value).map(|e| e.as_str()),
                Ok(value.as_str())
            );
        }
        let kinds = listed("callerScopeKind");
        assert_eq!(kinds.len(), 4);
        for value in &kinds {
            assert!(CallerScopeKind::parse(value).is_ok(), "{value}");
        }
        let families = listed("family");
        let all: Vec<&str> = CommandFamily::ALL.iter().map(|f| f.as_str()).collect();
        assert_eq!(families, all);
    }
}
