"""The journal's derived values, computed independently of the crate (the framed
SHA-256 of docs/architecture and the design contract), and Firebase emulator tokens.

The oracle checks a sample of these against `command-journal identity` at the end of
every run, so a disagreement between this file and the crate fails the run rather
than the oracle silently reading the wrong documents."""

import base64
import hashlib
import json
import time

ENVIRONMENT = "emulator"
SCOPE_KIND = "member"
COMMAND_TYPE = "checkout"
SCHEMA_VERSION = 1
OPERATION = "charge"


def frame_digest(domain, version, parts):
    """Lowercase hex SHA-256 over each part's 4-byte big-endian length and bytes."""
    h = hashlib.sha256()
    for part in [domain, str(version), *parts]:
        data = part.encode() if isinstance(part, str) else part
        h.update(len(data).to_bytes(4, "big"))
        h.update(data)
    return h.hexdigest()


def command_key_hash(caller_id, command_id):
    """`commandKeyHash` of a checkout of `caller_id` (a valid caller id is the uid)."""
    return frame_digest(
        "command-journal.command-key",
        1,
        [ENVIRONMENT, SCOPE_KIND, caller_id, COMMAND_TYPE, str(SCHEMA_VERSION), command_id],
    )


def attempt_key(key_hash, attempt):
    """The provider idempotency key of attempt `attempt` of the `charge` operation."""
    if attempt == 1:
        return "cj1-" + frame_digest("command-journal.provider-key", 1, [key_hash, OPERATION])
    return "cj1-" + frame_digest(
        "command-journal.provider-attempt-key", 1, [key_hash, OPERATION, str(attempt)]
    )


def identity_input(caller_id, command_id, payload):
    """The stdin object of `command-journal identity` for one checkout."""
    return {
        "environment": ENVIRONMENT,
        "callerScopeKind": SCOPE_KIND,
        "callerId": caller_id,
        "commandId": command_id,
        "commandType": COMMAND_TYPE,
        "endpointSchemaVersion": SCHEMA_VERSION,
        "payload": payload,
        "operation": OPERATION,
    }


def _b64(data):
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def unsigned_token(project, uid, now=None):
    """An unsigned Firebase ID token as `command-journal dev-token` prints it (valid
    for one hour); the service accepts it with FIREBASE_AUTH_EMULATOR_HOST set."""
    now = int(now if now is not None else time.time())
    claims = {
        "iss": f"https://securetoken.google.com/{project}",
        "aud": project,
        "iat": now,
        "exp": now + 3600,
        "auth_time": now,
        "sub": uid,
        "user_id": uid,
        "firebase": {"sign_in_provider": "custom", "identities": {}},
    }
    header = _b64(b'{"alg":"none","typ":"JWT"}')
    body = _b64(json.dumps(claims, separators=(",", ":")).encode())
    return f"{header}.{body}."
