//! Fixed outputs, canaries, immutability of the registration.

use super::*;

#[test]
fn outputs_serialize_to_exactly_the_fixed_shapes() {
    let mut store = registered_store();
    let acquired = run(&acquire(0, T0), &mut store).result.expect("acquire");
    assert_eq!(
        serde_json::to_value(acquired).expect("json"),
        json!({"journalSchemaVersion":1,"lifecycleSchemaVersion":1,"outcome":"lease_acquired",
               "state":"leased","fenceEpoch":1,
               "leaseExpiresAt":{"seconds":1_800_000_062_i64,"nanoseconds":623_456_000}})
    );
    assert_eq!(
        serde_json::to_string(&acquired).expect("json"),
        r#"{"journalSchemaVersion":1,"lifecycleSchemaVersion":1,"outcome":"lease_acquired","state":"leased","fenceEpoch":1,"leaseExpiresAt":{"seconds":1800000062,"nanoseconds":623456000}}"#
    );
    let busy = run(&acquire(1, T0), &mut store).result.expect("busy");
    assert_eq!(
        serde_json::to_string(&busy).expect("json"),
        r#"{"journalSchemaVersion":1,"lifecycleSchemaVersion":1,"outcome":"lease_busy","state":"leased"}"#
    );
    let mut failed = store.clone();
    let succeeded = run(&complete(0, 1, 0, T0 + 1), &mut store)
        .result
        .expect("complete");
    let terminal_succeeded = json!({"journalSchemaVersion":1,"lifecycleSchemaVersion":1,
        "outcome":"terminal_succeeded","state":"succeeded"});
    assert_eq!(
        serde_json::to_value(succeeded).expect("json"),
        terminal_succeeded
    );
    let observed = run(&acquire(2, T0 + 2), &mut store)
        .result
        .expect("observe");
    assert_eq!(observed, LeaseOutput::Succeeded);
    assert_eq!(
        serde_json::to_value(observed).expect("json"),
        terminal_succeeded
    );
    let failed_output = run(&fail(0, 1, T0 + 1), &mut failed).result.expect("fail");
    let terminal_failed = json!({"journalSchemaVersion":1,"lifecycleSchemaVersion":1,
        "outcome":"terminal_failed_final","state":"failed_final"});
    assert_eq!(
        serde_json::to_value(failed_output).expect("json"),
        terminal_failed
    );
    let observed = run(&acquire(2, T0 + 2), &mut failed)
        .result
        .expect("observe");
    assert_eq!(observed, LeaseOutput::FailedFinal);
    assert_eq!(
        serde_json::to_value(observed).expect("json"),
        terminal_failed
    );
    assert_eq!(
        serde_json::to_string(&failed_output).expect("json"),
        r#"{"journalSchemaVersion":1,"lifecycleSchemaVersion":1,"outcome":"terminal_failed_final","state":"failed_final"}"#
    );
    // A later-fence acquisition at a time with a whole second.
    let whole = LeaseOutput::Acquired {
        fence_epoch: crate::fence::FenceEpoch::stored(9_999_999_998),
        lease_expires_at: at(1_900_000_000_000_000),
    };
    assert_eq!(
        serde_json::to_string(&whole).expect("json"),
        r#"{"journalSchemaVersion":1,"lifecycleSchemaVersion":1,"outcome":"lease_acquired","state":"leased","fenceEpoch":9999999998,"leaseExpiresAt":{"seconds":1900000000,"nanoseconds":0}}"#
    );
}

#[test]
fn canaries_never_appear_in_debug_outputs_errors_or_storage() {
    let mut texts: Vec<String> = vec![
        format!("{:?}", call(0, T0)),
        format!("{:?}", acquire(1, T0)),
        format!("{:?}", complete(0, 1, 0, T0)),
        format!("{:?}", fail(2, 1, T0)),
        format!("{:?}", status(T0)),
        format!("{:?}", TerminalRequest::Succeed(commitment(1))),
    ];
    // Every error the state machine produces, with its Display and Debug.
    let mut errors: Vec<JournalError> = Vec::new();
    let mut empty = Store::new();
    errors.push(
        run(&acquire(0, T0), &mut empty)
            .result
            .expect_err("not registered"),
    );
    let mut store = registered_store();
    errors.push(
        run(&acquire(0, REGISTERED - 1), &mut store)
            .result
            .expect_err("regression"),
    );
    errors.push(
        run(&fail(0, 1, T0), &mut store)
            .result
            .expect_err("not held"),
    );
    let outputs = [
        run(&acquire(0, T0), &mut store).result.expect("acquire"),
        run(&acquire(1, T0), &mut store).result.expect("busy"),
        run(&acquire(0, T0 + 1), &mut store)
            .result
            .expect("recover"),
    ];
    errors.push(run(&fail(0, 2, T0), &mut store).result.expect_err("stale"));
    errors.push(
        run(&fail(0, 1, T0 + LEASE), &mut store)
            .result
            .expect_err("expired"),
    );
    let terminal = run(&complete(0, 1, 0, T0 + 1), &mut store)
        .result
        .expect("complete");
    errors.push(
        run(&complete(0, 1, 1, T0 + 2), &mut store)
            .result
            .expect_err("conflict"),
    );
    let mut corrupted = store.clone();
    corrupted.remove(&audit_path(3));
    errors.push(
        run(&acquire(0, T0), &mut corrupted)
            .result
            .expect_err("corrupt"),
    );
    let mut overflow = store_with(&Life::leased_at(0, MAX_REV - 1, T0, T0 - 1));
    errors.push(
        run(&acquire(1, T0 + LEASE), &mut overflow)
            .result
            .expect_err("overflow"),
    );
    let mut conflicting = store.clone();
    let other = input_with(json!({"sku": "mug"})).identity();
    errors.push(
        run(
            &Acquire::new(LeaseCall::new(other, owner(0), at(T0))),
            &mut conflicting,
        )
        .result
        .expect_err("command conflict"),
    );
    let mut output_texts: Vec<String> = Vec::new();
    for output in outputs {
        output_texts.push(format!("{output:?}"));
        output_texts.push(serde_json::to_string(&output).expect("json"));
    }
    output_texts.push(format!("{terminal:?}"));
    output_texts.push(serde_json::to_string(&terminal).expect("json"));
    let error_texts: Vec<String> = errors
        .iter()
        .map(|e| format!("{e} {e:?} {}", e.code()))
        .collect();
    texts.extend(output_texts.iter().cloned());
    texts.extend(error_texts.iter().cloned());
    // Every stored document, across a takeover too.
    run(&acquire(1, T0 + 10 * LEASE), &mut overflow)
        .result
        .expect_err("overflow");
    for (path, doc) in store.iter().chain(overflow.iter()) {
        texts.push(format!("{path} {doc:?}"));
    }
    let all = texts.join("\n");
    let canaries = [
        CALLER_ID.to_owned(),
        CALLER_ID.to_lowercase(),
        COMMAND_ID.to_owned(),
        PAYLOAD_CANARY.to_owned(),
        PAYLOAD_CANARY.to_lowercase(),
        LEASE_IDS[0].to_owned(),
        LEASE_IDS[1].to_owned(),
        LEASE_IDS[2].to_owned(),
        REFERENCES[0].to_owned(),
        REFERENCES[1].to_owned(),
    ];
    for canary in &canaries {
        assert!(!all.contains(canary.as_str()), "{canary} leaked");
    }
    // Outputs and errors expose no hash, holder or commitment either.
    let exposed = [output_texts, error_texts].concat().join("\n");
    for secret in [hash(), owner(0), owner(1), commitment(0), commitment(1)] {
        assert!(!exposed.contains(secret.as_str()), "{secret:?} exposed");
    }
    assert_eq!(errors.len(), 9);
}

#[test]
fn audit_events_exclude_the_owner_fingerprint_and_the_commitment() {
    let (mut store, first) = leased_store();
    let t1 = first.expires;
    run(&acquire(1, t1), &mut store).result.expect("takeover");
    run(&complete(1, 2, 0, t1 + 1), &mut store)
        .result
        .expect("complete");
    let lifecycle = format!("{:?}", store[&lifecycle_path()]);
    assert!(lifecycle.contains(owner(1).as_str()));
    assert!(lifecycle.contains(commitment(0).as_str()));
    for revision in 2..=4 {
        let event = &store[&audit_path(revision)];
        assert!(!event.contains_key("leaseOwnerFingerprint"));
        assert!(!event.contains_key("terminalCommitmentHash"));
        let text = format!("{event:?}");
        for secret in [owner(0), owner(1), commitment(0)] {
            assert!(!text.contains(secret.as_str()), "revision {revision}");
        }
    }
}

#[test]
fn registration_stays_exact_and_registered_existing_through_every_lifecycle_state() {
    let registration = registered_store();
    let check = |store: &Store| {
        for (path, doc) in registration.iter() {
            assert_eq!(store.get(path), Some(doc), "{path} changed");
        }
        let mut copy = store.clone();
        let ran = run(
            &Registration::new(identity(), at(T0 + 3_600 * SEC)),
            &mut copy,
        );
        assert_eq!(
            ran.result.map(|o| o.outcome()),
            Ok(RegistrationOutcome::RegisteredExisting)
        );
        assert!(ran.writes.is_empty());
    };
    let (mut store, first) = leased_store();
    check(&store);
    run(&acquire(1, first.expires), &mut store)
        .result
        .expect("takeover");
    check(&store);
    let mut failed = store.clone();
    run(&complete(1, 2, 0, first.expires + 1), &mut store)
        .result
        .expect("complete");
    check(&store);
    run(&fail(1, 2, first.expires + 1), &mut failed)
        .result
        .expect("fail");
    check(&failed);
}

#[test]
fn command_states_serialize_as_their_stored_names() {
    use crate::document::lifecycle::LifecycleState;
    use crate::lease::CommandState;
    for (state, name) in [
        (CommandState::Registered, "registered"),
        (CommandState::Leased, "leased"),
        (CommandState::Succeeded, "succeeded"),
        (CommandState::FailedFinal, "failed_final"),
    ] {
        assert_eq!(serde_json::to_value(state).ok(), Some(name.into()));
        assert_eq!(state.as_str(), name);
        assert_eq!(
            state.is_terminal(),
            matches!(name, "succeeded" | "failed_final")
        );
    }
    for stored in [
        LifecycleState::Leased,
        LifecycleState::Succeeded,
        LifecycleState::FailedFinal,
    ] {
        assert_eq!(CommandState::from(stored).as_str(), stored.as_str());
    }
}
