//! An in-memory documents root, the stand-in for Firestore that the call machine is
//! driven over in the tests (`core/src/testing/call.rs`).
//!
//! It answers what the machine asks as Firestore would, with logical write times:
//!
//! - A read ([`Store::read`]) answers the documents as they stand, each with its
//!   create and update times, at one read time for every read (`0`): a follow-up or
//!   confirming read of an attempt is answered from the store as it stands, which is
//!   the same state while nothing else writes in between.
//! - A commit ([`Store::commit_guarded`]) is atomic and checks every precondition
//!   against the store as it stands at commit time: a created document must still
//!   not exist (`exists: false`), a replaced one must still have the update time that
//!   was read. A commit that loses a precondition writes nothing. Every write of a
//!   commit gets the one commit time; a write that changes nothing keeps the update
//!   time, as Firestore does.
//!
//! Documents put in place with [`Store::insert`], [`Store::get_mut`] or
//! [`Store::remove`] stand for another writer (seeded state, corruption) and get a new
//! update time of their own; [`Store::forge`] edits one keeping its write times.

use crate::attempt::{Found, GuardedWrite, Precondition};
use crate::call::{ReadAnswer, TransactionId};
use crate::document::fields::FieldMap;
use crate::transaction::{CommitStamps, CommitTime, Snapshot, Write};
use std::collections::BTreeMap;
use std::ops::Index;

/// One document of the store, as [`Store::documents`] answers it.
#[derive(Debug, Clone, PartialEq)]
pub struct StoredDocument {
    /// Its path below the database's documents (`checkoutRequests/{hash}`, …).
    pub path: String,
    /// Its fields.
    pub fields: FieldMap,
    /// Its logical create time (seconds).
    pub create_time: u64,
    /// Its logical update time (seconds).
    pub update_time: u64,
}

/// A stored document, the logical time of the write that created it and of the write
/// that left it there.
#[derive(Debug, Clone, PartialEq)]
struct Stored {
    fields: FieldMap,
    create_time: u64,
    update_time: u64,
}

/// An in-memory documents root: path (relative to the documents root) to document.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Store {
    docs: BTreeMap<String, Stored>,
    /// The last commit or outside write; update times are drawn from it.
    clock: u64,
}

/// The update time each write of a commit left (with its comparable form), as
/// Firestore's write results give it: `None` for an absence guard.
pub type WriteResults = Vec<Option<(u64, CommitTime)>>;

/// A logical time in comparable form.
fn logical(t: u64) -> CommitTime {
    (i64::try_from(t).unwrap_or(i64::MAX), 0)
}

impl Store {
    /// An empty documents root.
    pub fn new() -> Self {
        Self::default()
    }

    /// The document at `path`.
    pub fn get(&self, path: &str) -> Option<&FieldMap> {
        self.docs.get(path).map(|stored| &stored.fields)
    }

    /// The logical time of the write that left the document at `path` (a commit's,
    /// shared by every write of it, or an outside write's).
    pub fn update_time(&self, path: &str) -> Option<u64> {
        self.docs.get(path).map(|stored| stored.update_time)
    }

    /// Whether a document exists at `path`.
    pub fn contains_key(&self, path: &str) -> bool {
        self.docs.contains_key(path)
    }

    /// Puts a document in place outside any operation (seeded state, an import, a
    /// corruption), as another writer would; returns the document it replaced.
    pub fn insert(&mut self, path: impl Into<String>, fields: FieldMap) -> Option<FieldMap> {
        self.clock += 1;
        let path = path.into();
        let create_time = self.docs.get(&path).map_or(self.clock, |s| s.create_time);
        let stored = Stored {
            fields,
            create_time,
            update_time: self.clock,
        };
        self.docs.insert(path, stored).map(|old| old.fields)
    }

    /// Puts documents in place together, as one commit of another writer would (one
    /// new update time shared by all): a forger writing a consistent batch.
    pub fn insert_together(&mut self, docs: impl IntoIterator<Item = (String, FieldMap)>) {
        self.clock += 1;
        for (path, fields) in docs {
            let create_time = self.docs.get(&path).map_or(self.clock, |s| s.create_time);
            let stored = Stored {
                fields,
                create_time,
                update_time: self.clock,
            };
            self.docs.insert(path, stored);
        }
    }

    /// Every document as Firestore would answer it: its path under the database's
    /// documents, its fields, and the logical write times as `createTime` and
    /// `updateTime` (seconds), in path order.
    pub fn documents(&self) -> Vec<StoredDocument> {
        self.docs
            .iter()
            .map(|(path, stored)| StoredDocument {
                path: path.clone(),
                fields: stored.fields.clone(),
                create_time: stored.create_time,
                update_time: stored.update_time,
            })
            .collect()
    }

    /// Edits a document in place and keeps its write times, as a forger who could set
    /// Firestore's commit times would: what the content checks alone must catch.
    pub fn forge(&mut self, path: &str) -> Option<&mut FieldMap> {
        self.docs.get_mut(path).map(|stored| &mut stored.fields)
    }

    /// The logical times of the writes that created the document at `path` and that
    /// last changed it, as Firestore's `createTime` and `updateTime` (one per commit).
    pub fn written(&self, path: &str) -> Option<(u64, u64)> {
        self.docs
            .get(path)
            .map(|stored| (stored.create_time, stored.update_time))
    }

    /// Edits a document in place outside any operation, as another writer would.
    pub fn get_mut(&mut self, path: &str) -> Option<&mut FieldMap> {
        self.clock += 1;
        let clock = self.clock;
        self.docs.get_mut(path).map(|stored| {
            stored.update_time = clock;
            &mut stored.fields
        })
    }

    /// Deletes a document outside any operation; returns it.
    pub fn remove(&mut self, path: &str) -> Option<FieldMap> {
        self.docs.remove(path).map(|stored| stored.fields)
    }

    /// Every stored path, in order.
    pub fn keys(&self) -> impl Iterator<Item = &String> {
        self.docs.keys()
    }

    /// Every stored document, in path order.
    pub fn values(&self) -> impl Iterator<Item = &FieldMap> {
        self.docs.values().map(|stored| &stored.fields)
    }

    /// Every stored path and document, in path order.
    pub fn iter(&self) -> impl Iterator<Item = (&String, &FieldMap)> {
        self.docs
            .iter()
            .map(|(path, stored)| (path, &stored.fields))
    }

    /// How many documents are stored.
    pub fn len(&self) -> usize {
        self.docs.len()
    }

    /// Whether no document is stored.
    pub fn is_empty(&self) -> bool {
        self.docs.is_empty()
    }

    /// How many documents are stored under `collection`.
    pub fn count(&self, collection: &str) -> usize {
        let prefix = format!("{collection}/");
        self.docs.keys().filter(|p| p.starts_with(&prefix)).count()
    }

    /// A snapshot of `paths` as they stand, for calling `decide` directly.
    pub fn snapshot(&self, paths: &[String]) -> Snapshot {
        Snapshot::new(paths.iter().map(|p| (p.clone(), self.get(p).cloned())))
    }

    /// What a read of `paths` answers at the store as it stands: every document found,
    /// with its update time as its version and its write times as its stamps, at read
    /// time `0`, in `transaction` when the read opened one.
    pub(crate) fn read(
        &self,
        paths: &[String],
        transaction: Option<TransactionId>,
    ) -> ReadAnswer<u64> {
        let found = paths
            .iter()
            .filter_map(|path| {
                let stored = self.docs.get(path)?;
                let found = Found {
                    fields: stored.fields.clone(),
                    version: Some(stored.update_time),
                    stamps: Some(CommitStamps {
                        created: logical(stored.create_time),
                        updated: logical(stored.update_time),
                    }),
                };
                Some((path.clone(), found))
            })
            .collect();
        ReadAnswer {
            found,
            read_time: Some(0),
            transaction,
        }
    }

    /// Commits `writes` atomically, each under its precondition checked against the
    /// store as it stands: the update time each write left, or `None`, with nothing
    /// written, when a precondition does not hold.
    pub fn commit_guarded(&mut self, writes: &[GuardedWrite<u64>]) -> Option<WriteResults> {
        let holds = writes.iter().all(|guarded| {
            let stored = self.docs.get(guarded.write.path());
            match &guarded.precondition {
                Precondition::Absent => stored.is_none(),
                Precondition::UpdatedAt(read) => stored.map(|s| s.update_time) == Some(*read),
            }
        });
        if !holds {
            return None;
        }
        if writes.is_empty() {
            return Some(Vec::new());
        }
        self.clock += 1;
        let mut results = Vec::with_capacity(writes.len());
        for guarded in writes {
            // An unchanged guard is sent as the rewrite it is (`src/runner/firestore.rs`),
            // and answered, as every write but a delete, with the update time it left.
            let (Write::Create { path, fields }
            | Write::Replace { path, fields }
            | Write::AssertUnchanged { path, fields }) = &guarded.write
            else {
                results.push(None);
                continue;
            };
            // As Firestore does, a write that changes nothing keeps the update time.
            let old = self.docs.get(path);
            let create_time = old.map_or(self.clock, |s| s.create_time);
            let update_time = match old {
                Some(old) if &old.fields == fields => old.update_time,
                _ => self.clock,
            };
            let stored = Stored {
                fields: fields.clone(),
                create_time,
                update_time,
            };
            self.docs.insert(path.clone(), stored);
            results.push(Some((update_time, logical(update_time))));
        }
        Some(results)
    }

    /// The same documents with every logical time `t` as `time(t)` (which must keep
    /// their order), the clock at the latest of them: a store that behaves the same.
    pub fn renumbered(&self, time: impl Fn(u64) -> u64) -> Self {
        let docs: BTreeMap<String, Stored> = self
            .docs
            .iter()
            .map(|(path, stored)| {
                let stored = Stored {
                    fields: stored.fields.clone(),
                    create_time: time(stored.create_time),
                    update_time: time(stored.update_time),
                };
                (path.clone(), stored)
            })
            .collect();
        let clock = docs.values().map(|s| s.update_time).max().unwrap_or(0);
        Self { docs, clock }
    }
}

impl<Q: AsRef<str> + ?Sized> Index<&Q> for Store {
    type Output = FieldMap;

    /// The document at `path`; panics when there is none.
    fn index(&self, path: &Q) -> &FieldMap {
        let path = path.as_ref();
        match self.get(path) {
            Some(fields) => fields,
            None => panic!("no document at {path}"),
        }
    }
}

#[cfg(test)]
mod tests;
