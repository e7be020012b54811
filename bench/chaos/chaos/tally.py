"""Counts by kind."""


class Tally(dict):
    """A dict of kind -> count, sorted when printed."""

    def add(self, kind, n=1):
        self[kind] = self.get(kind, 0) + n

    def sorted(self):
        return {k: self[k] for k in sorted(self)}
