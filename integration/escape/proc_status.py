# /proc/self/status: every capability set empty, NoNewPrivs 1, Seccomp 2 (filter mode).
want = {"CapInh": "0000000000000000", "CapPrm": "0000000000000000", "CapEff": "0000000000000000",
        "CapBnd": "0000000000000000", "CapAmb": "0000000000000000", "NoNewPrivs": "1", "Seccomp": "2"}
got = {}
for line in open("/proc/self/status"):
    k, _, v = line.partition(":")
    got[k] = v.strip()
bad = ["%s=%s" % (k, got.get(k)) for k in want if got.get(k) != want[k]]
if bad:
    report(False, " ".join(bad))
report(True, "caps empty, NoNewPrivs 1, Seccomp 2")
