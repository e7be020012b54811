"""The soak harness of the whole system under faults (bench/chaos/README.md)."""
