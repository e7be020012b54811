'use strict';
// The Node.js peer of the side-by-side benchmark (bench/side_by_side.rs).
//
// It does what command-journal does — register, acquire and complete a commerce
// command (docs/leases.md) — with the official Node.js client
// (@google-cloud/firestore) and its own `runTransaction` with the default retry
// (5 attempts, exponential backoff from 1 s), as the seed's JavaScript module would:
// the same documents at the same paths, the same fields and types, the same strict
// checks before any write, the same decisions. Identity hashes are derived here with
// the same length-framed SHA-256 as the crate (checked against the crate at start-up
// by the runner's `selftest`).
//
// Reads per transaction ("natural", the default, as a JavaScript author writes it):
//   1. getAll(root, revision-1 audit, lifecycle)
//   2. getAll(current audit partner, next audit)   -- `next` is revision 2 when no
//      lifecycle exists yet (it must be absent), so a first acquire reads it too.
// Registration reads only (root, revision-1 audit, lifecycle).
// Mode "speculative" reads root, revision-1 audit, lifecycle and audits 2..=4 in the
// first getAll, as the crate does, and reads again only when the partner or the next
// event falls outside that window: a diagnostic that isolates the cost of the second
// round trip from the cost of the transaction protocol.
//
// Protocol: one JSON object per line on stdin, one JSON answer per line on stdout,
// `{"id": n, "ok": {...}}` or `{"id": n, "err": "message"}`. Timings are measured
// here, around the library calls only, so the pipe is not measured.

// Never probe for a Google Compute Engine metadata server: against the emulator the
// client needs no credentials, and the probe would send traffic off this machine
// (google-auth-library asks for a universe domain when the first stub is created).
process.env.METADATA_SERVER_DETECTION = 'none';

const crypto = require('node:crypto');
const readline = require('node:readline');
const { performance } = require('node:perf_hooks');
const { Firestore, Timestamp, setLogFunction } = require('@google-cloud/firestore');

// The emulator address comes from FIRESTORE_EMULATOR_HOST, like any Node.js user of
// the emulator. The variable takes precedence over every `host` setting in the
// client, so it is read once and removed, and each client gets `host` and
// `ssl: false` explicitly (which is all the variable does) — that lets the runner
// point one client at its counting proxy.
const EMULATOR_HOST = process.env.FIRESTORE_EMULATOR_HOST;
delete process.env.FIRESTORE_EMULATOR_HOST;

const LEASE_SECONDS = 60;
const MAX_REVISION = 9999999999;
const SPECULATIVE = [2, 3, 4];

// ---------------------------------------------------------------- identity (B1)

function frameDigest(domain, version, parts) {
  const hash = crypto.createHash('sha256');
  for (const part of [domain, String(version), ...parts]) {
    const bytes = Buffer.from(part, 'utf8');
    const len = Buffer.alloc(4);
    len.writeUInt32BE(bytes.length);
    hash.update(len);
    hash.update(bytes);
  }
  return hash.digest('hex');
}

// RFC 8785: ECMAScript serialization of primitives, object keys sorted by UTF-16
// code units (JavaScript's default sort order).
function canonicalJson(value) {
  if (value === null || typeof value !== 'object') return JSON.stringify(value);
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  const keys = Object.keys(value).sort();
  return `{${keys.map(k => `${JSON.stringify(k)}:${canonicalJson(value[k])}`).join(',')}}`;
}

class JournalError extends Error {
  constructor(code, reason) {
    super(reason ? `${code}: ${reason}` : code);
    this.code = code;
  }
}
const invalid = field => new JournalError('invalid_input', field);
const corrupt = reason => new JournalError('journal_corrupt', reason);

const ENVIRONMENTS = ['emulator', 'test', 'staging', 'production'];
const SCOPES = ['member', 'guest', 'officer', 'service'];
const UUID_V4 = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
const SLUG = /^[a-z][a-z0-9_]{0,62}$/;
const CALLER = /^[A-Za-z0-9_-]{1,128}$/;
const HEX64 = /^[0-9a-f]{64}$/;

function payloadOk(value, depth) {
  if (value === null || typeof value === 'string' || typeof value === 'boolean') return true;
  if (typeof value === 'number') return Number.isSafeInteger(value);
  if (depth > 32) return false;
  if (Array.isArray(value)) return value.every(v => payloadOk(v, depth + 1));
  if (typeof value === 'object') return Object.values(value).every(v => payloadOk(v, depth + 1));
  return false;
}

// Validates a command as the crate's CommandInput::new does and derives its identity.
function commandIdentity(c) {
  if (!ENVIRONMENTS.includes(c.environment)) throw invalid('environment');
  if (!SCOPES.includes(c.callerScopeKind)) throw invalid('callerScopeKind');
  if (!CALLER.test(c.callerId)) throw invalid('callerId');
  if (!UUID_V4.test(c.commandId)) throw invalid('commandId');
  if (!SLUG.test(c.commandType)) throw invalid('commandType');
  const v = c.endpointSchemaVersion;
  if (!Number.isInteger(v) || v < 1 || v > 9999) throw invalid('endpointSchemaVersion');
  const p = c.payload;
  if (p === null || typeof p !== 'object' || Array.isArray(p) || !payloadOk(p, 1)) {
    throw invalid('payload');
  }
  const canonical = canonicalJson(p);
  if (Buffer.byteLength(canonical, 'utf8') > 65536) throw invalid('payload');
  const commandKeyHash = frameDigest('command-journal.command-key', 1, [
    c.environment,
    c.callerScopeKind,
    c.callerId,
    c.commandType,
    String(v),
    c.commandId,
  ]);
  return {
    commandKeyHash,
    payloadFingerprint: frameDigest('command-journal.payload', 1, [commandKeyHash, canonical]),
    canonical,
    environment: c.environment,
    callerScopeKind: c.callerScopeKind,
    commandType: c.commandType,
    endpointSchemaVersion: v,
  };
}

function leaseOwner(c, id, leaseId) {
  if (!UUID_V4.test(leaseId) || leaseId === c.commandId) throw invalid('leaseId');
  return frameDigest('command-journal.lease-owner', 1, [id.commandKeyHash, leaseId]);
}

function terminalCommitment(id, reference) {
  if (!HEX64.test(reference)) throw invalid('terminalReferenceFingerprint');
  return frameDigest('command-journal.terminal-commitment', 1, [
    id.commandKeyHash,
    'business_record_digest',
    reference,
  ]);
}

// ---------------------------------------------------------------- time

// The trusted time, captured once before the transaction, truncated to whole
// microseconds (Firestore stores microseconds). Kept as integer microseconds.
function nowMicros() {
  return Math.floor((performance.timeOrigin + performance.now()) * 1000);
}
const toTimestamp = micros =>
  new Timestamp(Math.floor(micros / 1e6), (((micros % 1e6) + 1e6) % 1e6) * 1000);
const seconds = micros => Math.floor(micros / 1e6);
const nanoseconds = micros => (((micros % 1e6) + 1e6) % 1e6) * 1000;

// ---------------------------------------------------------------- strict codecs

const ROOT_FIELDS = [
  'journalSchemaVersion', 'commandKeyHash', 'state', 'commandRevision', 'environment',
  'callerScopeKind', 'commandType', 'endpointSchemaVersion', 'payloadFingerprint',
  'registeredAt',
];
const AUDIT1_FIELDS = [
  'auditSchemaVersion', 'aggregateType', 'commandKeyHash', 'commandRevision', 'eventType',
  'fromState', 'toState', 'environment', 'callerScopeKind', 'commandType', 'occurredAt',
];
const AUDIT2_FIELDS = [...AUDIT1_FIELDS.slice(0, 10), 'fenceEpoch', 'leaseExpiresAt', 'occurredAt'];
const LIFECYCLE_FIELDS = [
  'lifecycleSchemaVersion', 'commandKeyHash', 'state', 'commandRevision', 'fenceEpoch',
  'leaseOwnerFingerprint', 'leaseAcquiredAt', 'leaseExpiresAt', 'createdAt', 'updatedAt',
  'terminalCommitmentKind', 'terminalCommitmentHash',
];

class Strict {
  constructor(data, fields, kind) {
    const keys = Object.keys(data);
    if (keys.length !== fields.length || !fields.every(f => Object.hasOwn(data, f))) {
      throw corrupt(kind);
    }
    this.d = data;
    this.kind = kind;
  }
  fail() {
    return corrupt(this.kind);
  }
  int(name, lo, hi) {
    const v = this.d[name];
    if (!Number.isSafeInteger(v) || v < lo || v > hi) throw this.fail();
    return v;
  }
  str(name) {
    const v = this.d[name];
    if (typeof v !== 'string') throw this.fail();
    return v;
  }
  eq(name, expected) {
    if (this.d[name] !== expected) throw this.fail();
  }
  oneOf(name, allowed) {
    const v = this.str(name);
    if (!allowed.includes(v)) throw this.fail();
    return v;
  }
  digest(name) {
    const v = this.str(name);
    if (!HEX64.test(v)) throw this.fail();
    return v;
  }
  slug(name) {
    const v = this.str(name);
    if (!SLUG.test(v)) throw this.fail();
    return v;
  }
  time(name) {
    const v = this.d[name];
    if (!(v instanceof Timestamp)) throw this.fail();
    return v.seconds * 1e6 + Math.floor(v.nanoseconds / 1000);
  }
  nullable(name, check) {
    const v = this.d[name];
    if (v === null) return null;
    if (typeof v !== 'string' || !check(v)) throw this.fail();
    return v;
  }
}

const auditId = (hash, revision) => `commerce_command_${hash}_${String(revision).padStart(10, '0')}`;

function parseRoot(hash, data) {
  const f = new Strict(data, ROOT_FIELDS, 'malformed registration root');
  f.int('journalSchemaVersion', 1, 1);
  f.eq('state', 'registered');
  f.int('commandRevision', 1, 1);
  if (f.digest('commandKeyHash') !== hash) throw f.fail();
  return {
    environment: f.oneOf('environment', ENVIRONMENTS),
    callerScopeKind: f.oneOf('callerScopeKind', SCOPES),
    commandType: f.slug('commandType'),
    endpointSchemaVersion: f.int('endpointSchemaVersion', 1, 9999),
    payloadFingerprint: f.digest('payloadFingerprint'),
    registeredAt: f.time('registeredAt'),
  };
}

function parseAudit1(hash, data) {
  const f = new Strict(data, AUDIT1_FIELDS, 'malformed registration audit event');
  f.int('auditSchemaVersion', 1, 1);
  f.eq('aggregateType', 'commerce_command');
  f.int('commandRevision', 1, 1);
  f.eq('eventType', 'command_registered');
  f.eq('fromState', null);
  f.eq('toState', 'registered');
  if (f.digest('commandKeyHash') !== hash) throw f.fail();
  return {
    environment: f.oneOf('environment', ENVIRONMENTS),
    callerScopeKind: f.oneOf('callerScopeKind', SCOPES),
    commandType: f.slug('commandType'),
    occurredAt: f.time('occurredAt'),
  };
}

const EVENT_STATES = {
  command_lease_acquired: ['registered', 'leased'],
  command_lease_taken_over: ['leased', 'leased'],
  command_succeeded: ['leased', 'succeeded'],
  command_failed_final: ['leased', 'failed_final'],
};

function parseTransition(hash, revision, data) {
  const f = new Strict(data, AUDIT2_FIELDS, 'malformed transition audit event');
  f.int('auditSchemaVersion', 2, 2);
  f.eq('aggregateType', 'commerce_command');
  if (f.digest('commandKeyHash') !== hash) throw f.fail();
  const commandRevision = f.int('commandRevision', 2, MAX_REVISION);
  if (commandRevision !== revision) throw f.fail();
  const eventType = f.oneOf('eventType', Object.keys(EVENT_STATES));
  const [from, to] = EVENT_STATES[eventType];
  f.eq('fromState', from);
  f.eq('toState', to);
  const fenceEpoch = f.int('fenceEpoch', 1, MAX_REVISION);
  const fits =
    eventType === 'command_lease_acquired'
      ? commandRevision === 2 && fenceEpoch === 1
      : eventType === 'command_lease_taken_over'
        ? fenceEpoch >= 2 && commandRevision === fenceEpoch + 1
        : commandRevision === fenceEpoch + 2;
  if (!fits) throw f.fail();
  return {
    commandRevision,
    eventType,
    environment: f.oneOf('environment', ENVIRONMENTS),
    callerScopeKind: f.oneOf('callerScopeKind', SCOPES),
    commandType: f.slug('commandType'),
    fenceEpoch,
    leaseExpiresAt: f.time('leaseExpiresAt'),
    occurredAt: f.time('occurredAt'),
  };
}

function parseLifecycle(hash, data) {
  const f = new Strict(data, LIFECYCLE_FIELDS, 'malformed lifecycle document');
  f.int('lifecycleSchemaVersion', 1, 1);
  if (f.digest('commandKeyHash') !== hash) throw f.fail();
  const lc = {
    state: f.oneOf('state', ['leased', 'succeeded', 'failed_final']),
    commandRevision: f.int('commandRevision', 2, MAX_REVISION),
    fenceEpoch: f.int('fenceEpoch', 1, MAX_REVISION),
    leaseOwnerFingerprint: f.digest('leaseOwnerFingerprint'),
    leaseAcquiredAt: f.time('leaseAcquiredAt'),
    leaseExpiresAt: f.time('leaseExpiresAt'),
    createdAt: f.time('createdAt'),
    updatedAt: f.time('updatedAt'),
  };
  const kind = f.nullable('terminalCommitmentKind', k => k === 'business_record_digest');
  lc.terminalCommitment = f.nullable('terminalCommitmentHash', h => HEX64.test(h));
  if ((kind === null) !== (lc.terminalCommitment === null)) throw f.fail();
  const expiryFixed = lc.leaseAcquiredAt + LEASE_SECONDS * 1e6 === lc.leaseExpiresAt;
  const createdFits =
    lc.fenceEpoch === 1 ? lc.createdAt === lc.leaseAcquiredAt : lc.createdAt < lc.leaseAcquiredAt;
  const byState =
    lc.state === 'leased'
      ? lc.terminalCommitment === null &&
        lc.updatedAt === lc.leaseAcquiredAt &&
        lc.commandRevision === lc.fenceEpoch + 1
      : (lc.state === 'succeeded') === (lc.terminalCommitment !== null) &&
        lc.leaseAcquiredAt <= lc.updatedAt &&
        lc.updatedAt < lc.leaseExpiresAt &&
        lc.commandRevision === lc.fenceEpoch + 2;
  if (!expiryFixed || !createdFits || !byState) throw f.fail();
  return lc;
}

function encodeRoot(id, now) {
  return {
    journalSchemaVersion: 1,
    commandKeyHash: id.commandKeyHash,
    state: 'registered',
    commandRevision: 1,
    environment: id.environment,
    callerScopeKind: id.callerScopeKind,
    commandType: id.commandType,
    endpointSchemaVersion: id.endpointSchemaVersion,
    payloadFingerprint: id.payloadFingerprint,
    registeredAt: toTimestamp(now),
  };
}

function encodeAudit1(id, now) {
  return {
    auditSchemaVersion: 1,
    aggregateType: 'commerce_command',
    commandKeyHash: id.commandKeyHash,
    commandRevision: 1,
    eventType: 'command_registered',
    fromState: null,
    toState: 'registered',
    environment: id.environment,
    callerScopeKind: id.callerScopeKind,
    commandType: id.commandType,
    occurredAt: toTimestamp(now),
  };
}

function encodeLifecycle(hash, lc) {
  return {
    lifecycleSchemaVersion: 1,
    commandKeyHash: hash,
    state: lc.state,
    commandRevision: lc.commandRevision,
    fenceEpoch: lc.fenceEpoch,
    leaseOwnerFingerprint: lc.leaseOwnerFingerprint,
    leaseAcquiredAt: toTimestamp(lc.leaseAcquiredAt),
    leaseExpiresAt: toTimestamp(lc.leaseExpiresAt),
    createdAt: toTimestamp(lc.createdAt),
    updatedAt: toTimestamp(lc.updatedAt),
    terminalCommitmentKind: lc.terminalCommitment === null ? null : 'business_record_digest',
    terminalCommitmentHash: lc.terminalCommitment,
  };
}

function encodeTransition(hash, root, lc, eventType) {
  const [from, to] = EVENT_STATES[eventType];
  return {
    auditSchemaVersion: 2,
    aggregateType: 'commerce_command',
    commandKeyHash: hash,
    commandRevision: lc.commandRevision,
    eventType,
    fromState: from,
    toState: to,
    environment: root.environment,
    callerScopeKind: root.callerScopeKind,
    commandType: root.commandType,
    fenceEpoch: lc.fenceEpoch,
    leaseExpiresAt: toTimestamp(lc.leaseExpiresAt),
    occurredAt: toTimestamp(lc.updatedAt),
  };
}

// ---------------------------------------------------------------- the journal

class Journal {
  constructor(db, mode) {
    this.db = db;
    this.speculative = mode === 'speculative';
  }

  refs(hash) {
    const db = this.db;
    return {
      root: db.doc(`checkoutRequests/${hash}`),
      audit: rev => db.doc(`auditEvents/${auditId(hash, rev)}`),
      lifecycle: db.doc(`checkoutRequests/${hash}/lifecycle/current`),
    };
  }

  // Parses and cross-checks the registration pair (the crate's check_registration).
  static checkRegistration(id, root, audit1) {
    if (!root.exists && !audit1.exists) return null;
    if (!audit1.exists) throw corrupt('registration root without its audit event');
    if (!root.exists) throw corrupt('registration audit event without its root');
    const hash = id.commandKeyHash;
    const r = parseRoot(hash, root.data());
    const e = parseAudit1(hash, audit1.data());
    const keyMatches =
      r.environment === id.environment &&
      r.callerScopeKind === id.callerScopeKind &&
      r.commandType === id.commandType &&
      r.endpointSchemaVersion === id.endpointSchemaVersion;
    if (!keyMatches) throw corrupt('registration root disagrees with its command key');
    const pairMatches =
      e.environment === r.environment &&
      e.callerScopeKind === r.callerScopeKind &&
      e.commandType === r.commandType &&
      e.occurredAt === r.registeredAt;
    if (!pairMatches) throw corrupt('registration audit event disagrees with its root');
    if (r.payloadFingerprint !== id.payloadFingerprint) throw new JournalError('command_conflict');
    return r;
  }

  async register(command) {
    const id = commandIdentity(command);
    const now = nowMicros();
    const refs = this.refs(id.commandKeyHash);
    return this.db.runTransaction(async tx => {
      const [root, audit1, lifecycle] = await tx.getAll(refs.root, refs.audit(1), refs.lifecycle);
      if (Journal.checkRegistration(id, root, audit1)) {
        return { journalSchemaVersion: 1, outcome: 'registered_existing', state: 'registered' };
      }
      if (lifecycle.exists) throw corrupt('lifecycle without its registration');
      tx.create(refs.root, encodeRoot(id, now));
      tx.create(refs.audit(1), encodeAudit1(id, now));
      return { journalSchemaVersion: 1, outcome: 'registered_new', state: 'registered' };
    });
  }

  // Reads and validates, inside `tx`, everything that must hold before any write
  // (the crate's LeaseCall::load): registration pair, lifecycle, its exact current
  // audit partner and the absence of the next audit event.
  async load(tx, id) {
    const hash = id.commandKeyHash;
    const refs = this.refs(hash);
    const first = [refs.root, refs.audit(1), refs.lifecycle];
    if (this.speculative) first.push(...SPECULATIVE.map(refs.audit));
    const snaps = await tx.getAll(...first);
    const [rootSnap, audit1Snap, lifeSnap] = snaps;
    const window = new Map(this.speculative ? SPECULATIVE.map((r, i) => [r, snaps[3 + i]]) : []);
    const root = Journal.checkRegistration(id, rootSnap, audit1Snap);
    if (!root) {
      const orphan = lifeSnap.exists || [...window.values()].some(s => s.exists);
      throw orphan ? corrupt('lifecycle records without a registration') : new JournalError('not_registered');
    }
    const revisions = lifeSnap.exists ? null : [2];
    let current = null;
    let wanted = revisions;
    if (lifeSnap.exists) {
      current = parseLifecycle(hash, lifeSnap.data());
      wanted = [current.commandRevision, current.commandRevision + 1];
    }
    const missing = wanted.filter(r => !window.has(r));
    if (missing.length > 0) {
      const more = await tx.getAll(...missing.map(refs.audit));
      missing.forEach((r, i) => window.set(r, more[i]));
    }
    if (!current) {
      if (window.get(2).exists) throw corrupt('transition audit event without a lifecycle');
      return { root, current: null };
    }
    const [partnerRev, nextRev] = wanted;
    if (window.get(nextRev).exists) throw corrupt('the next audit event already exists');
    const partner = window.get(partnerRev);
    if (!partner.exists) throw corrupt('lifecycle without its current audit event');
    const event = parseTransition(hash, partnerRev, partner.data());
    if (current.createdAt < root.registeredAt) throw corrupt('lifecycle predates its registration');
    const expectedType =
      current.state === 'leased'
        ? current.fenceEpoch === 1
          ? 'command_lease_acquired'
          : 'command_lease_taken_over'
        : current.state === 'succeeded'
          ? 'command_succeeded'
          : 'command_failed_final';
    const partners =
      event.eventType === expectedType &&
      event.environment === root.environment &&
      event.callerScopeKind === root.callerScopeKind &&
      event.commandType === root.commandType &&
      event.fenceEpoch === current.fenceEpoch &&
      event.leaseExpiresAt === current.leaseExpiresAt &&
      event.occurredAt === current.updatedAt;
    if (!partners) throw corrupt('lifecycle disagrees with its current audit event');
    return { root, current };
  }

  async acquire(command, leaseId) {
    const id = commandIdentity(command);
    const owner = leaseOwner(command, id, leaseId);
    const now = nowMicros();
    const hash = id.commandKeyHash;
    const refs = this.refs(hash);
    const terminal = state => ({
      journalSchemaVersion: 1,
      lifecycleSchemaVersion: 1,
      outcome: state === 'succeeded' ? 'terminal_succeeded' : 'terminal_failed_final',
      state,
    });
    const acquired = lc => ({
      journalSchemaVersion: 1,
      lifecycleSchemaVersion: 1,
      outcome: 'lease_acquired',
      state: 'leased',
      fenceEpoch: lc.fenceEpoch,
      leaseExpiresAt: { seconds: seconds(lc.leaseExpiresAt), nanoseconds: nanoseconds(lc.leaseExpiresAt) },
    });
    return this.db.runTransaction(async tx => {
      const { root, current } = await this.load(tx, id);
      if (!current) {
        if (now < root.registeredAt) throw new JournalError('clock_regression');
        const after = {
          state: 'leased',
          commandRevision: 2,
          fenceEpoch: 1,
          leaseOwnerFingerprint: owner,
          leaseAcquiredAt: now,
          leaseExpiresAt: now + LEASE_SECONDS * 1e6,
          createdAt: now,
          updatedAt: now,
          terminalCommitment: null,
        };
        tx.create(refs.lifecycle, encodeLifecycle(hash, after));
        tx.create(refs.audit(2), encodeTransition(hash, root, after, 'command_lease_acquired'));
        return acquired(after);
      }
      if (current.state !== 'leased') return terminal(current.state);
      // An earlier-captured time only observes: it never takes over.
      if (now < current.updatedAt || now < current.leaseExpiresAt) {
        return current.leaseOwnerFingerprint === owner
          ? acquired(current)
          : { journalSchemaVersion: 1, lifecycleSchemaVersion: 1, outcome: 'lease_busy', state: 'leased' };
      }
      const after = {
        ...current,
        commandRevision: current.commandRevision + 1,
        fenceEpoch: current.fenceEpoch + 1,
        leaseOwnerFingerprint: owner,
        leaseAcquiredAt: now,
        leaseExpiresAt: now + LEASE_SECONDS * 1e6,
        updatedAt: now,
        terminalCommitment: null,
      };
      if (after.commandRevision > MAX_REVISION || after.fenceEpoch > MAX_REVISION) {
        throw new JournalError('revision_overflow');
      }
      tx.set(refs.lifecycle, encodeLifecycle(hash, after));
      tx.create(refs.audit(after.commandRevision), encodeTransition(hash, root, after, 'command_lease_taken_over'));
      return acquired(after);
    });
  }

  async complete(command, leaseId, expectedFenceEpoch, reference) {
    if (!Number.isSafeInteger(expectedFenceEpoch) || expectedFenceEpoch < 1 || expectedFenceEpoch > MAX_REVISION) {
      throw invalid('expectedFenceEpoch');
    }
    const id = commandIdentity(command);
    const owner = leaseOwner(command, id, leaseId);
    const commitment = terminalCommitment(id, reference);
    const now = nowMicros();
    const hash = id.commandKeyHash;
    const refs = this.refs(hash);
    const output = { journalSchemaVersion: 1, lifecycleSchemaVersion: 1, outcome: 'terminal_succeeded', state: 'succeeded' };
    return this.db.runTransaction(async tx => {
      const { root, current } = await this.load(tx, id);
      if (!current || current.leaseOwnerFingerprint !== owner) throw new JournalError('lease_not_held');
      if (current.fenceEpoch !== expectedFenceEpoch) throw new JournalError('stale_fence');
      if (current.state !== 'leased') {
        // Exact retry (even after expiry) observes; anything else conflicts.
        if (current.state === 'succeeded' && current.terminalCommitment === commitment) return output;
        throw new JournalError('terminal_conflict');
      }
      if (now < current.updatedAt) throw new JournalError('clock_regression');
      if (now >= current.leaseExpiresAt) throw new JournalError('lease_expired');
      const after = {
        ...current,
        state: 'succeeded',
        commandRevision: current.commandRevision + 1,
        updatedAt: now,
        terminalCommitment: commitment,
      };
      if (after.commandRevision > MAX_REVISION) throw new JournalError('revision_overflow');
      tx.set(refs.lifecycle, encodeLifecycle(hash, after));
      tx.create(refs.audit(after.commandRevision), encodeTransition(hash, root, after, 'command_succeeded'));
      return output;
    });
  }
}

// ---------------------------------------------------------------- workload helpers

// The same command generator as the runner's: ids differ per (tag, n).
function uuid(tag, n) {
  return `5eed0000-${tag.toString(16).padStart(4, '0')}-4000-8000-${n.toString(16).padStart(12, '0')}`;
}
function makeCommand(tag, n) {
  return {
    environment: 'emulator',
    callerScopeKind: 'member',
    callerId: 'bench-caller',
    commandId: uuid(tag, n),
    commandType: 'checkout',
    endpointSchemaVersion: 1,
    payload: { sku: 'tee', quantity: 1, n },
  };
}
const REFERENCE = 'ab'.repeat(32);
const hr = () => process.hrtime.bigint();
const micros = (a, b) => Number(b - a) / 1000;

function errorCode(e) {
  if (e instanceof JournalError) return e.code;
  if (e && typeof e.code === 'number') return `grpc_${e.code}`;
  return 'other';
}

// One full command: register, acquire, complete. Returns the three latencies (µs).
async function lifecycleOnce(journal, tag, n, leaseTag) {
  const cmd = makeCommand(tag, n);
  const lease = uuid(leaseTag, n);
  const t0 = hr();
  await journal.register(cmd);
  const t1 = hr();
  const a = await journal.acquire(cmd, lease);
  const t2 = hr();
  if (a.outcome !== 'lease_acquired') throw new Error(`unexpected ${a.outcome}`);
  const c = await journal.complete(cmd, lease, a.fenceEpoch, REFERENCE);
  const t3 = hr();
  if (c.outcome !== 'terminal_succeeded') throw new Error(`unexpected ${c.outcome}`);
  return [micros(t0, t1), micros(t1, t2), micros(t2, t3)];
}

// ---------------------------------------------------------------- RPC counting

// The client logs every request it sends ("Sending request: {json}"); BatchGet is
// streamed, the rest are unary. Counting is on only while a count is taken, since
// formatting every request costs CPU.
const rpcCounts = { batchGet: 0, commit: 0, beginTransaction: 0, rollback: 0, other: 0 };
function countingLog(line) {
  const at = line.indexOf('Sending request: ');
  if (at < 0) return;
  const body = line.slice(at + 'Sending request: '.length);
  let req;
  try {
    req = JSON.parse(body);
  } catch {
    rpcCounts.other += 1;
    return;
  }
  if (line.includes('[Firestore.requestStream]') && 'documents' in req) rpcCounts.batchGet += 1;
  else if ('writes' in req) rpcCounts.commit += 1;
  else if ('options' in req) rpcCounts.beginTransaction += 1;
  else if ('transaction' in req) rpcCounts.rollback += 1;
  else rpcCounts.other += 1;
}

// ---------------------------------------------------------------- the driver

const clients = new Map();
function client(project, host) {
  const key = `${project}@${host || EMULATOR_HOST}`;
  if (!clients.has(key)) {
    clients.set(key, new Firestore({ projectId: project, host: host || EMULATOR_HOST, ssl: false }));
  }
  return clients.get(key);
}
const journalFor = m => new Journal(client(m.project, m.host), m.mode);

const handlers = {
  async hello() {
    return { node: process.version, firestore: require('@google-cloud/firestore/package.json').version };
  },

  // Identity of each command, for the runner to compare with the crate's.
  async selftest(m) {
    return m.cases.map(c => {
      const id = commandIdentity(c.command);
      return {
        commandKeyHash: id.commandKeyHash,
        payloadFingerprint: id.payloadFingerprint,
        canonicalPayload: id.canonical,
        leaseOwnerFingerprint: leaseOwner(c.command, id, c.leaseId),
        terminalCommitmentHash: terminalCommitment(id, c.reference),
      };
    });
  },

  // One operation, its output or its error code (parity checks).
  async call(m) {
    const j = journalFor(m);
    try {
      if (m.call === 'register') return await j.register(m.command);
      if (m.call === 'acquire') return await j.acquire(m.command, m.leaseId);
      return await j.complete(m.command, m.leaseId, m.fenceEpoch, m.reference);
    } catch (e) {
      return { error: errorCode(e) };
    }
  },

  // Sequential latency: commands [from, from+count) of `tag`, one after another.
  async sequential(m) {
    const j = journalFor(m);
    const samples = [];
    for (let i = 0; i < m.count; i++) samples.push(await lifecycleOnce(j, m.tag, m.from + i, m.tag + 1));
    return { samples };
  },

  // The 24-holder first-acquire race on one registered command.
  async race(m) {
    const j = journalFor(m);
    const cmd = makeCommand(m.tag, m.n);
    if (m.register !== false) await j.register(cmd);
    const t0 = hr();
    const answeredUs = [];
    const results = await Promise.all(
      Array.from({ length: m.holders }, (_, i) =>
        j
          .acquire(cmd, uuid(m.tag + 1, m.n * 1000 + i))
          .then(
            r => r.outcome,
            e => `error:${errorCode(e)}`,
          )
          .then(outcome => {
            answeredUs.push(micros(t0, hr()));
            return outcome;
          }),
      ),
    );
    const wallUs = micros(t0, hr());
    return { wallUs, results, answeredUs };
  },

  // Throughput: `workers` loops on distinct commands until `durationMs` passed.
  async throughput(m) {
    const j = journalFor(m);
    const deadline = hr() + BigInt(Math.round(m.durationMs * 1e6));
    let completed = 0;
    let errors = 0;
    const t0 = hr();
    await Promise.all(
      Array.from({ length: m.workers }, async (_, w) => {
        let n = 0;
        while (hr() < deadline) {
          try {
            await lifecycleOnce(j, m.tag, (w + 1) * 1000000 + n, m.tag + 1);
            completed += 1;
          } catch {
            errors += 1;
          }
          n += 1;
        }
      }),
    );
    return { completed, errors, elapsedUs: micros(t0, hr()) };
  },

  async countStart() {
    for (const k of Object.keys(rpcCounts)) rpcCounts[k] = 0;
    setLogFunction(countingLog);
    return {};
  },

  async countStop() {
    setLogFunction(null);
    return { ...rpcCounts };
  },

  async close() {
    await Promise.all([...clients.values()].map(c => c.terminate()));
    clients.clear();
    return {};
  },
};

const rl = readline.createInterface({ input: process.stdin, terminal: false });
rl.on('line', async line => {
  let m;
  try {
    m = JSON.parse(line);
  } catch (e) {
    process.stdout.write(`${JSON.stringify({ id: null, err: `bad json: ${e.message}` })}\n`);
    return;
  }
  try {
    const handler = handlers[m.op];
    if (!handler) throw new Error(`unknown op ${m.op}`);
    const ok = await handler(m);
    process.stdout.write(`${JSON.stringify({ id: m.id, ok })}\n`);
  } catch (e) {
    process.stdout.write(`${JSON.stringify({ id: m.id, err: String(e && e.stack ? e.stack : e) })}\n`);
  }
});
rl.on('close', async () => {
  await handlers.close();
  process.exit(0);
});
