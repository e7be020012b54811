"""Counts by kind, and the fault log: what the schedule drew against what fired."""


class Tally(dict):
    """A dict of kind -> count, sorted when printed."""

    def add(self, kind, n=1):
        self[kind] = self.get(kind, 0) + n

    def sorted(self):
        return {k: self[k] for k in sorted(self)}


# A kind of fault drawn this many times that never fired is the harness's failure
# (an injector that does nothing), not chance: every proxy carries traffic most of
# the time, and a process is up when it is killed.
NEVER_FIRED_LIMIT = 3


class FaultLog:
    """Every fault by kind, twice: `drawn` when the schedule decides it, `fired` only
    from its effect (bytes held, a connection cut, a request dropped, a process
    killed, an offset a process states it applied). A fault drawn with nothing to act
    on (a stall of a proxy with no connection, a kill of a process that already
    ended) is drawn and never fires: `idle`. Effects with no draw of their own (the
    connections one reset cut) are counted in `fired` alone."""

    def __init__(self):
        self.drawn = Tally()
        self.fired = Tally()

    def draw(self, kind):
        self.drawn.add(kind)

    def fire(self, kind, n=1):
        self.fired.add(kind, n)

    def both(self, kind):
        """A fault decided and applied at once (a request dropped as it arrives)."""
        self.draw(kind)
        self.fire(kind)

    def add(self, kind, n=1):
        """An effect counted as it fired (the `Tally` interface of older callers)."""
        self.fire(kind, n)

    def idle(self):
        """Drawn faults that never fired, by kind."""
        idle = Tally()
        for kind, n in self.drawn.items():
            if n > self.fired.get(kind, 0):
                idle.add(kind, n - self.fired.get(kind, 0))
        return idle.sorted()

    def never_fired(self, limit=NEVER_FIRED_LIMIT):
        """Kinds drawn at least `limit` times that never fired: harness errors."""
        return sorted(k for k, n in self.drawn.items()
                      if n >= limit and self.fired.get(k, 0) == 0)


class RpcTimes:
    """Firestore RPCs by method, as a fault proxy saw them: how long the emulator
    took to begin each answer (`answered`; `clean` when no stall or partition of the
    proxy began or held while it was timed, the only ones whose time is the
    emulator's alone) and the gRPC status each answer ended with (`status`)."""

    def __init__(self):
        self.timed = Tally()
        self.longest = {}
        self.under_hold = Tally()
        self.statuses = Tally()

    def answered(self, method, seconds, clean):
        if not clean:
            self.under_hold.add(method)
            return
        self.timed.add(method)
        self.longest[method] = max(self.longest.get(method, 0.0), seconds)

    def status(self, method, code):
        self.statuses.add(f"{method} {code}")

    def merge(self, other):
        """Adds `other`'s books to these."""
        for mine, theirs in ((self.timed, other.timed), (self.under_hold, other.under_hold),
                             (self.statuses, other.statuses)):
            for k, n in theirs.items():
                mine.add(k, n)
        for k, v in other.longest.items():
            self.longest[k] = max(self.longest.get(k, 0.0), v)
        return self
