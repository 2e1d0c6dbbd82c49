# perf_event_open(2) with a NULL attr.
expect_fail(sc("perf_event_open", None, 0, -1, -1, 0), "perf_event_open")
