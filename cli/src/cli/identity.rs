//! `command-journal identity`: the derived identity of one command, offline.
//!
//! Besides the command's own digests it prints, when their inputs are given, the
//! lease-owner fingerprint, the terminal commitment, a provider plan's fingerprint and
//! the provider key of any attempt (`docs/identity.md`): everything a caller or an
//! independent implementation needs to check a stored value without Firestore.

use super::input::{Failure, Input};
use super::schema::Subject;
use super::sends::plan;
use crate::identity::OperationSlug;
use crate::{CommandInput, JournalError, LeaseId, ProviderPlan, TerminalReferenceFingerprint};
use command_journal_core::sends::AttemptNumber;
use command_journal_core::tools::sends::plan::attempt_key;
use serde_json::{Value, json};

/// The stdin object of `identity`, validated: the command and the optional inputs of
/// the lease-owner fingerprint, the terminal commitment, the plan fingerprint and the
/// provider key.
#[derive(Debug)]
pub struct IdentityQuery {
    command: CommandInput,
    lease: Option<LeaseId>,
    reference: Option<TerminalReferenceFingerprint>,
    operation: Option<OperationSlug>,
    plan: Option<Box<ProviderPlan>>,
    attempt: Option<AttemptNumber>,
}

/// An optional integer key: absent or null is `None`, anything but an integer is
/// `invalid_input` naming it.
fn optional_integer(input: &mut Input, field: &'static str) -> Result<Option<i64>, Failure> {
    match input.optional_value(field) {
        None | Some(Value::Null) => Ok(None),
        Some(value) => value
            .as_i64()
            .map(Some)
            .ok_or(JournalError::InvalidInput { field }.into()),
    }
}

impl IdentityQuery {
    /// Validates the whole stdin object (its keys first, then each value in order).
    ///
    /// `attempt` (1 to 9999) needs `operation` or `plan`: it names the attempt whose
    /// key is printed, of `operation`, else of the plan's operation. With both, the
    /// `operation` must be the plan's (`invalid_input` on `operation` otherwise), so
    /// the key printed is never of another operation than the plan sends.
    pub fn parse(stdin: &str) -> Result<Self, Failure> {
        let mut input = Input::parse(stdin)?;
        input.only(&Subject::Identity.keys())?;
        let command = input.command()?;
        let lease = input.optional_string("leaseId")?;
        let reference = input.optional_string("terminalReferenceFingerprint")?;
        let operation = input.optional_string("operation")?;
        let plan_value = match input.optional_value("plan") {
            None | Some(Value::Null) => None,
            Some(value) => Some(value),
        };
        let attempt = optional_integer(&mut input, "attempt")?;
        input.finish()?;
        let lease = lease.as_deref().map(LeaseId::parse).transpose()?;
        let reference = reference
            .as_deref()
            .map(TerminalReferenceFingerprint::parse)
            .transpose()?;
        let operation = operation.as_deref().map(OperationSlug::parse).transpose()?;
        let plan = plan_value.as_ref().map(plan).transpose()?.map(Box::new);
        let keyed = operation.is_some() || plan.is_some();
        let attempt = attempt
            .map(|n| AttemptNumber::new(n).ok().filter(|_| keyed))
            .map(|n| n.ok_or(JournalError::invalid("attempt")))
            .transpose()?;
        if let (Some(operation), Some(plan)) = (&operation, &plan)
            && operation != plan.operation()
        {
            return Err(JournalError::invalid("operation").into());
        }
        Ok(Self {
            command,
            lease,
            reference,
            operation,
            plan,
            attempt,
        })
    }

    /// Derives `commandKeyHash`, `payloadFingerprint`, `canonicalPayload` and, when
    /// their inputs are present, the lease-owner fingerprint, terminal commitment,
    /// plan fingerprint and provider key (of attempt 1, or of `attempt`).
    pub fn derive(&self) -> Result<Value, JournalError> {
        let command = &self.command;
        let identity = command.identity();
        let mut out = json!({
            "commandKeyHash": identity.command_key_hash().as_str(),
            "payloadFingerprint": identity.payload_fingerprint().as_str(),
            "canonicalPayload": command.payload().canonical(),
        });
        if let Some(lease) = &self.lease {
            out["leaseOwnerFingerprint"] = json!(command.lease_owner(&identity, lease)?.as_str());
        }
        if let Some(reference) = &self.reference {
            out["terminalCommitmentHash"] = json!(identity.terminal_commitment(reference).as_str());
        }
        if let Some(plan) = &self.plan {
            out["planFingerprint"] = json!(plan.fingerprint(&identity).as_str());
        }
        // The key's operation: `operation`, else (with `attempt`) the plan's.
        let keyed = self.operation.as_ref().or(self
            .attempt
            .and(self.plan.as_ref())
            .map(|plan| plan.operation()));
        if let Some(operation) = keyed {
            let attempt = self.attempt.unwrap_or(AttemptNumber::FIRST);
            out["providerIdempotencyKey"] = json!(attempt_key(&identity, operation, attempt));
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::IdentityQuery;
    use crate::JournalError;
    use crate::cli::input::Failure;
    use serde_json::{Value, json};

    fn vectors() -> Value {
        serde_json::from_str(include_str!("../../../testdata/send_vectors.json")).expect("vectors")
    }

    /// The vectors' command with `extra` keys (a `null` removes a key).
    fn stdin(extra: Value) -> String {
        let mut command = vectors()["command"].clone();
        let map = command.as_object_mut().expect("object");
        for (key, value) in extra.as_object().expect("object") {
            if value.is_null() {
                map.remove(key);
            } else {
                map.insert(key.clone(), value.clone());
            }
        }
        command.to_string()
    }

    fn derive(extra: Value) -> Value {
        IdentityQuery::parse(&stdin(extra))
            .expect("valid")
            .derive()
            .expect("derived")
    }

    /// The `invalid_input` field of a refused stdin object.
    fn refused(extra: Value) -> String {
        match IdentityQuery::parse(&stdin(extra)).expect_err("refused") {
            Failure::Journal(JournalError::InvalidInput { field }) => field.to_owned(),
            other => panic!("not invalid_input on a known key: {other:?}"),
        }
    }

    #[test]
    fn plan_fingerprint_and_every_attempt_key_match_the_independent_vectors() {
        let vectors = vectors();
        for case in vectors["plans"].as_array().expect("plans") {
            let plan = &case["plan"];
            let expected = &case["expected"];
            let out = derive(json!({"plan": plan, "operation": null}));
            assert_eq!(out["planFingerprint"], expected["planFingerprint"]);
            assert_eq!(out["commandKeyHash"], vectors["commandKeyHash"]);
            assert!(
                out.get("providerIdempotencyKey").is_none(),
                "a plan alone prints no key: {out}"
            );
            for (n, key) in expected["attemptKeys"].as_object().expect("keys") {
                let n: i64 = n.parse().expect("attempt");
                // From the plan's operation, and from the same operation given alone.
                let from_plan = derive(json!({"plan": plan, "operation": null, "attempt": n}));
                assert_eq!(&from_plan["providerIdempotencyKey"], key, "{n}");
                let from_operation = derive(json!({"operation": plan["operation"], "attempt": n}));
                assert_eq!(&from_operation["providerIdempotencyKey"], key, "{n}");
                let both = derive(json!({"plan": plan, "operation": plan["operation"],
                                         "attempt": n}));
                assert_eq!(&both["providerIdempotencyKey"], key, "{n}");
            }
            // Without `attempt`, `operation` prints attempt 1's key, as before.
            if let Some(key) = expected["attemptKeys"].get("1") {
                let first = derive(json!({"operation": plan["operation"]}));
                assert_eq!(&first["providerIdempotencyKey"], key);
            }
        }
    }

    #[test]
    fn attempt_and_plan_are_validated_naming_the_key() {
        let plan = vectors()["plans"][0]["plan"].clone();
        for attempt in [json!(0), json!(10_000), json!(-1), json!("2"), json!(1.5)] {
            assert_eq!(refused(json!({"attempt": attempt})), "attempt", "{attempt}");
        }
        // The largest attempt names a key; one more is out of range.
        let last = derive(json!({"operation": "charge", "attempt": 9_999}));
        assert!(last["providerIdempotencyKey"].is_string(), "{last}");
        // An attempt names a key of an operation: it needs `operation` or `plan`.
        assert_eq!(refused(json!({"operation": null, "attempt": 2})), "attempt");
        // With both, the operation must be the plan's.
        assert_eq!(
            refused(json!({"plan": plan, "operation": "refund", "attempt": 2})),
            "operation"
        );
        assert_eq!(
            refused(json!({"plan": plan, "operation": "refund"})),
            "operation"
        );
        // The plan's own keys and rules, as `send begin` checks them.
        let mut bad = plan.clone();
        bad["mode"] = json!("sandbox");
        assert_eq!(refused(json!({"plan": bad})), "mode");
        let mut bad = plan.clone();
        bad["lookupSettleSeconds"] = json!(86_401);
        assert_eq!(refused(json!({"plan": bad})), "lookupSettleSeconds");
        let mut bad = plan.clone();
        bad["extra"] = json!(1);
        assert_eq!(refused(json!({"plan": bad})), "plan");
        assert_eq!(refused(json!({"plan": "stripe"})), "plan");
        // Null is absent, as for the other optional keys.
        let out = derive(json!({"plan": null, "attempt": null}));
        assert!(out.get("planFingerprint").is_none());
    }
}
