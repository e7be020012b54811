"""The deployment's fixed settings: the project, the plan's key retention and settle
window, the lease, the clock offsets drawn, and the simulated time of the phases."""

PROJECT = "demo-chaos"
RETENTION = 86_400
SETTLE = 240
# The Stripe client's own settle window (`--events` runs the service on Stripe).
STRIPE_SETTLE = 300
LEASE = 60
CUTOFF = RETENTION - RETENTION // 4
OFFSETS_MS = [0, 0, 0, 0, 2_000, -2_000, 90_000, -90_000]
LATE_JUMP = CUTOFF + 300
FINAL_EXTRA = LEASE + SETTLE + 90 + 120
