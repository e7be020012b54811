//! Parity: the peer derives the crate's identities, and each side reads, accepts and
//! finishes the other's documents.

use crate::crate_side::{self, RawCommand, uuid};
use crate::{Bench, Res, err};
use command_journal::RegistrationOutcome;
use command_journal::{LeaseId, TerminalReferenceFingerprint};
use command_journal::{LeaseOutput, TerminalOutput};
use serde_json::{Value, json};

pub(crate) fn check(condition: bool, what: &str) -> Res<()> {
    if condition {
        Ok(())
    } else {
        Err(format!("parity check failed: {what}"))
    }
}

/// The peer derives the crate's identities, and each side reads, accepts and
/// finishes the documents the other wrote; the crate's verifier finds the peer's
/// documents clean. Any difference in paths, fields, types or checks fails here.
pub(crate) async fn parity(bench: &mut Bench) -> Res<Vec<String>> {
    let mut notes = Vec::new();
    // Identity.
    let cases: Vec<Value> = (0..3)
        .map(|n| {
            json!({"command": RawCommand::new(7, n).to_json(), "leaseId": uuid(8, n),
                   "reference": crate_side::REFERENCE})
        })
        .collect();
    let theirs = bench
        .peer_call(json!({"op": "selftest", "cases": cases}))
        .await?;
    for n in 0..3u64 {
        let input = RawCommand::new(7, n).input().map_err(err)?;
        let identity = input.identity();
        let lease = LeaseId::parse(&uuid(8, n)).map_err(err)?;
        let reference = TerminalReferenceFingerprint::parse(crate_side::REFERENCE).map_err(err)?;
        let ours = json!({
            "commandKeyHash": identity.command_key_hash().as_str(),
            "payloadFingerprint": identity.payload_fingerprint().as_str(),
            "canonicalPayload": input.payload().canonical(),
            "leaseOwnerFingerprint": input.lease_owner(&identity, &lease).map_err(err)?.as_str(),
            "terminalCommitmentHash": identity.terminal_commitment(&reference).as_str(),
        });
        check(
            ours == theirs[n as usize],
            "the peer derives the crate's identities",
        )?;
    }
    notes.push("identities: the peer derives the crate's five hashes exactly".to_owned());

    // Cross reads and writes in one project.
    let project = bench.emulator.new_project_id();
    let host = bench.emulator.host().to_owned();
    let journal = bench.journal(&project, &host).await?;
    let tag = bench.tag();
    let reference = TerminalReferenceFingerprint::parse(crate_side::REFERENCE).map_err(err)?;
    let peer = |call: &str, n: u64, lease: Option<String>, fence: Option<i64>| {
        json!({"op": "call", "project": project, "call": call,
               "command": RawCommand::new(tag, n).to_json(), "leaseId": lease,
               "fenceEpoch": fence, "reference": crate_side::REFERENCE})
    };
    let lease_of = |n: u64, holder: u64| uuid(tag + 1, n * 10 + holder);
    let outcome = |v: &Value| v["outcome"].as_str().unwrap_or("?").to_owned();

    // A: the peer finishes a command; the crate accepts every document.
    let a = RawCommand::new(tag, 1).input().map_err(err)?;
    bench.peer_call(peer("register", 1, None, None)).await?;
    let acquired = bench
        .peer_call(peer("acquire", 1, Some(lease_of(1, 0)), None))
        .await?;
    check(outcome(&acquired) == "lease_acquired", "peer acquires")?;
    let fence = acquired["fenceEpoch"].as_i64().unwrap_or(0);
    let done = bench
        .peer_call(peer("complete", 1, Some(lease_of(1, 0)), Some(fence)))
        .await?;
    check(outcome(&done) == "terminal_succeeded", "peer completes")?;
    let registered = journal.register_command(&a).await.map_err(err)?;
    check(
        registered.outcome() == RegistrationOutcome::RegisteredExisting,
        "crate accepts the peer's registration",
    )?;
    let other = LeaseId::parse(&lease_of(1, 1)).map_err(err)?;
    check(
        journal.acquire_lease(&a, &other).await.map_err(err)? == LeaseOutput::Succeeded,
        "crate reads the peer's terminal lifecycle and audit partner",
    )?;
    let holder = LeaseId::parse(&lease_of(1, 0)).map_err(err)?;
    check(
        journal
            .complete_command(
                &a,
                &holder,
                command_journal::FenceEpoch::new(fence).map_err(|e| e.to_string())?,
                &reference,
            )
            .await
            .map_err(err)?
            == TerminalOutput::Succeeded,
        "crate sees the peer's commitment as an exact retry",
    )?;

    // B: the crate finishes a command; the peer accepts every document.
    let b = RawCommand::new(tag, 2).input().map_err(err)?;
    journal.register_command(&b).await.map_err(err)?;
    let holder = LeaseId::parse(&lease_of(2, 0)).map_err(err)?;
    let LeaseOutput::Acquired { fence_epoch, .. } =
        journal.acquire_lease(&b, &holder).await.map_err(err)?
    else {
        return Err("crate acquire".into());
    };
    journal
        .complete_command(&b, &holder, fence_epoch, &reference)
        .await
        .map_err(err)?;
    let r = bench.peer_call(peer("register", 2, None, None)).await?;
    check(
        outcome(&r) == "registered_existing",
        "peer accepts the crate's registration",
    )?;
    let r = bench
        .peer_call(peer("acquire", 2, Some(lease_of(2, 1)), None))
        .await?;
    check(
        outcome(&r) == "terminal_succeeded",
        "peer reads the crate's lifecycle",
    )?;
    let r = bench
        .peer_call(peer(
            "complete",
            2,
            Some(lease_of(2, 0)),
            Some(fence_epoch.get()),
        ))
        .await?;
    check(
        outcome(&r) == "terminal_succeeded",
        "peer sees the crate's commitment as an exact retry",
    )?;

    // C: the peer leases, the crate is busy, then completes with the peer's lease.
    let c = RawCommand::new(tag, 3).input().map_err(err)?;
    bench.peer_call(peer("register", 3, None, None)).await?;
    let acquired = bench
        .peer_call(peer("acquire", 3, Some(lease_of(3, 0)), None))
        .await?;
    let fence = acquired["fenceEpoch"].as_i64().unwrap_or(0);
    let other = LeaseId::parse(&lease_of(3, 1)).map_err(err)?;
    check(
        journal.acquire_lease(&c, &other).await.map_err(err)? == LeaseOutput::Busy,
        "crate is busy on the peer's lease",
    )?;
    let holder = LeaseId::parse(&lease_of(3, 0)).map_err(err)?;
    check(
        journal
            .complete_command(
                &c,
                &holder,
                command_journal::FenceEpoch::new(fence).map_err(|e| e.to_string())?,
                &reference,
            )
            .await
            .map_err(err)?
            == TerminalOutput::Succeeded,
        "crate completes on the peer's lease",
    )?;
    let r = bench
        .peer_call(peer("complete", 3, Some(lease_of(3, 0)), Some(fence)))
        .await?;
    check(
        outcome(&r) == "terminal_succeeded",
        "peer retries the crate's completion",
    )?;

    // D: the crate leases, the peer is busy, then completes with the crate's lease.
    let d = RawCommand::new(tag, 4).input().map_err(err)?;
    journal.register_command(&d).await.map_err(err)?;
    let holder = LeaseId::parse(&lease_of(4, 0)).map_err(err)?;
    let LeaseOutput::Acquired { fence_epoch, .. } =
        journal.acquire_lease(&d, &holder).await.map_err(err)?
    else {
        return Err("crate acquire".into());
    };
    let r = bench
        .peer_call(peer("acquire", 4, Some(lease_of(4, 1)), None))
        .await?;
    check(
        outcome(&r) == "lease_busy",
        "peer is busy on the crate's lease",
    )?;
    let r = bench
        .peer_call(peer(
            "complete",
            4,
            Some(lease_of(4, 0)),
            Some(fence_epoch.get()),
        ))
        .await?;
    check(
        outcome(&r) == "terminal_succeeded",
        "peer completes on the crate's lease",
    )?;
    check(
        journal
            .complete_command(&d, &holder, fence_epoch, &reference)
            .await
            .map_err(err)?
            == TerminalOutput::Succeeded,
        "crate retries the peer's completion",
    )?;

    // The crate's verifier over the whole mixed journal.
    let report = command_journal::verify(journal.connection(), &mut |_| {})
        .await
        .map_err(err)?;
    check(
        report.clean,
        "the crate's verifier finds the mixed journal clean",
    )?;
    check(
        (
            report.scanned.checkout_requests,
            report.scanned.lifecycles,
            report.scanned.audit_events,
        ) == (4, 4, 12),
        "4 roots, 4 lifecycles, 12 audit events",
    )?;
    notes.push(
        "documents: each side registered, leased and completed commands the other read, \
         was busy on, completed or retried; the crate's verifier found the mixed journal \
         clean (4 roots, 4 lifecycles, 12 audit events)"
            .to_owned(),
    );
    Ok(notes)
}
