//! What only the shell needs of the core: the transitions and their contract, the
//! call machine, the codecs of a command's root, lifecycle and audit documents, the
//! other documents' collections, field names and paths, and the verifier's checks.
//!
//! The library's driver, the `command-journal` CLI, the emulator harness, the
//! benchmarks and the fuzz targets build on these. A service does not: it uses the
//! `command-journal` library, whose documented API is the rest of this package. Each
//! module here is named for the core module it comes from (a single item of a private
//! submodule, such as `pending::read`, sometimes appears at its parent's) and
//! re-exports what those tools use: the items they name, the `Io` payloads a driver
//! matches, and whole the modules of `known` and of the verifier's checks and the
//! documents they read (except `checkpoints` and `ranges`, which give one item or
//! two). Nothing here is stable across versions.

pub mod known {
    //! Deciding from what the journal just read or wrote, without a read.

    pub use crate::known::*;
}

pub mod attempt {
    //! The sans-I/O attempt machine's read and write vocabulary: what a read found, a
    //! guarded write and its precondition.

    pub use crate::attempt::{Found, GuardedWrite, Precondition, ReadKind};
}

pub mod call {
    //! The call machine every operation runs through, the I/O it asks for and the answers
    //! it takes.

    pub use crate::call::{
        Call, CallOptions, CommitKind, Consistency, Input, Io, Labelled, Metric, Now, Program,
        Quiet, ReadAnswer, RetryCause, RpcFailure, Single, TransactionId, Untold,
    };
}

pub mod document {
    //! The strict codecs of the stored documents: one module per document type, the typed
    //! field maps and the value type.

    pub use crate::document::{audit, fields, lifecycle, release, root, value};
}

pub mod envelope {
    //! Result envelopes: the stored document, reading one, and storing one with the success
    //! that ends a command.

    pub use crate::envelope::stored;

    pub mod read {
        //! Reading a command's stored result envelope (`result`).

        pub use crate::envelope::read::ResultRead;
    }

    pub mod record {
        //! Storing a result envelope with the success that ends a command, composed around
        //! the transitions that end one (the guarded `complete_command`,
        //! `record_send_outcome` and `reconcile_send`).

        pub use crate::envelope::record::WithResult;
    }
}

pub mod evidence {
    //! Evidence given from outside, as a program of the call machine, and the
    //! checkpoints of the jobs that list it.

    pub mod checkpoint {
        //! `evidenceCheckpoints/{digest of the feed's name}`: its collection, its read
        //! and its forward-only advance.

        pub use crate::evidence::checkpoint::{
            COLLECTION, EvidenceCheckpointAdvance, EvidenceCheckpointRead,
        };
    }

    pub mod program {
        //! Recording one piece of evidence: the key index read, then the settle
        //! program from the answer given.

        pub use crate::evidence::program::{EvidenceOp, EvidenceOutput, EvidenceProgram};
    }
}

pub mod execute {
    //! The whole send protocol behind one call.

    pub mod program {
        //! `execute` as a program of the call machine.

        pub use crate::execute::program::ExecuteProgram;
    }
}

pub mod lease {
    //! The lease transitions: acquire, terminal, release, status, and what one call of a command
    //! knows.

    pub use crate::lease::{
        Acquire, CommandCall, LeaseCall, Release, ReleaseOutput, StatusRead, Terminal,
        TerminalRequest,
    };
}

pub mod ledger {
    //! The ledger's transitions, and its documents' collections, field names and paths.

    pub mod effect {
        //! `ledgerTransactions/{effectId}`: its collection, field names and path.

        pub use crate::ledger::effect::{COLLECTION, FIELDS, path};
    }

    pub mod correction {
        //! `ledgerTransactions/{effectId}/corrections/current`, the bound on what the
        //! reversals of one effect return: its collection, document, fields and path;
        //! and the log entries beside it (`entry`).

        pub use crate::ledger::correction::{COLLECTION, DOCUMENT, FIELDS, path};

        pub mod entry {
            //! `ledgerTransactions/{effectId}/corrections/{position}`, one entry of the
            //! log of the reversal effects counted against the effect: its fields and
            //! path.

            pub use crate::ledger::correction::entry::{FIELDS, path};
        }
    }

    #[cfg(any(test, feature = "testing"))]
    pub mod fixtures {
        //! Test fixtures shared by the ledger unit tests.

        pub use crate::ledger::fixtures::*;
    }

    pub mod reservation {
        //! `ledgerReservations/{reservationId}`: its collection, field names and path.

        pub use crate::ledger::reservation::{COLLECTION, FIELDS_V1, FIELDS_V2, path};
    }

    pub mod accept {
        //! Accepting a ledger command (`docs/ledger.md`).

        pub use crate::ledger::accept::Accept;
    }

    pub mod fingerprint {
        //! The fingerprint serializers' JSON parsing (the types are at `ledger`).

        pub mod json {
            //! Strict parsing of the serializer input's JSON parts.

            pub use crate::ledger::fingerprint::json::object;
        }
    }

    pub mod migration {
        //! The explicit migration call that links historical effects to a reservation.

        pub use crate::ledger::migration::Link;
    }

    pub mod replay {
        //! Replay before pricing.

        pub use crate::ledger::replay::Replay;
    }
}

pub mod pending {
    //! The prepared read of one listed command.

    pub use crate::pending::read::PendingRead;
}

pub mod recovery {
    //! Recovering one command by its key hash: the program, its owner, checkpoints and the
    //! run's order.

    pub use crate::recovery::owner::recovery_owner;

    pub mod checkpoint {
        //! `recoveryCheckpoints/{index}-of-{count}`.

        pub use crate::recovery::checkpoint::{COLLECTION, CheckpointRead, CheckpointRecord};
    }

    pub mod program {
        //! The recovery of one command as a program of the call machine.

        pub use crate::recovery::program::{RecoveryOp, RecoveryOutput, RecoveryProgram};
    }

    pub mod schedule {
        //! The order a recovery run handles its range in.

        pub use crate::recovery::schedule::circular;
    }
}

pub mod registration {
    //! Immutable registration.

    pub use crate::registration::Registration;
}

pub mod sends {
    //! The send layer's transitions and the fields of its documents.

    pub mod attempt {
        //! `checkoutRequests/{commandKeyHash}/providerSends/current`: its field names.

        pub use crate::sends::attempt::FIELDS;
    }

    pub mod begin {
        //! `begin_send`.

        pub use crate::sends::begin::BeginSend;
    }

    pub mod bound_plan {
        //! `checkoutRequests/{commandKeyHash}/providerSends/plan`: its field names.

        pub use crate::sends::bound_plan::FIELDS;
    }

    pub mod event {
        //! `auditEvents/provider_send_{commandKeyHash}_{sendRevision:010}`: its field
        //! names.

        pub use crate::sends::event::FIELDS;
    }

    pub mod guard {
        //! The guard composed around B2B's `complete_command` and `fail_command` at the
        //! journal.

        pub use crate::sends::guard::Guarded;
    }

    pub mod key_index {
        //! `providerKeys/{digest of the key}`: the index that finds an attempt's command
        //! from its provider idempotency key alone.

        pub use crate::sends::key_index::{COLLECTION, KeyIndex, id, path};
    }

    pub mod late {
        //! `checkoutRequests/{commandKeyHash}/lateCharges/{attempt:04}`: a charge its
        //! command ended without, as `pending` lists it, and its record.

        pub use crate::pending::late::listed;
        pub use crate::sends::late::{COLLECTION, RecordLateCharge, parse_id};
    }

    pub mod load {
        //! The first read of every send operation.

        pub use crate::sends::load::first_read;
    }

    pub mod plan {
        //! The plan's default settle window and its attempts' keys (the plan is at
        //! `sends`).

        pub use crate::sends::plan::{DEFAULT_LOOKUP_SETTLE_SECONDS, attempt_key};
    }

    pub mod record {
        //! Recording what the provider answered an attempt.

        pub use crate::sends::record::{Mode, Record};
    }

    pub mod status {
        //! `status` with the send layer.

        pub use crate::sends::status::SendStatusRead;
    }
}

pub mod start {
    //! One-call start.

    pub use crate::start::Start;
}

pub mod transaction {
    //! The transition contract every operation implements: reads, a pure decision, writes.

    pub use crate::transaction::{
        CommitStamps, CommitTime, Decision, MAX_FOLLOW_UP_READS, OperationName, Snapshot,
        Transition, Write,
    };
}

pub mod verify {
    //! The verifier's checks, pure, with where a scanned document belongs, the scan's
    //! range bounds and the documents the checks read.

    pub mod attention {
        //! What verify lists for a person beside the broken invariants.

        pub use crate::verify::attention::*;
    }

    pub mod commerce {
        //! Pure invariant checks over one command's documents.

        pub use crate::verify::commerce::*;
    }

    pub mod historical_links {
        //! Cross-document checks of historical ledger rows, which a name-ordered scan
        //! cannot settle one reservation at a time.

        pub use crate::verify::historical_links::*;
    }

    pub mod corrections {
        //! Cross-document checks of reversals against the effects they correct.

        pub use crate::verify::corrections::*;
    }

    pub mod cross_checks {
        //! The ledger's cross-document checks together, settled once every range was
        //! read.

        pub use crate::verify::cross_checks::*;
    }

    pub mod keys {
        //! Where a scanned document belongs.

        pub use crate::verify::keys::*;
    }

    pub mod ledger {
        //! Pure invariant checks over ledger reservations and their effects.

        pub use crate::verify::ledger::*;
    }

    pub mod pending_index {
        //! The pending listing's index held to the lifecycles, both ways.

        pub use crate::verify::pending_index::*;
    }

    pub mod ranges {
        //! Consistent ranges of a verify scan.

        pub use crate::verify::ranges::{Bounds, bounds};
    }

    pub mod stored {
        //! The documents the checks read.

        pub use crate::verify::stored::*;
    }

    pub mod write_times {
        //! Pure checks of the write times Firestore keeps on every document (`createTime`,
        //! `updateTime`).

        pub use crate::verify::write_times::*;
    }

    pub mod checkpoints {
        //! The recovery checkpoints (`recoveryCheckpoints/{index}-of-{count}`) and the
        //! evidence checkpoints (`evidenceCheckpoints/{digest}`), each checked on its
        //! own.

        pub use crate::verify::checkpoints::{check, check_evidence};
    }

    pub mod provider_keys {
        //! The provider keys' index (`providerKeys/{digest of the key}`), each
        //! document held to its command.

        pub use crate::verify::provider_keys::*;
    }
}
