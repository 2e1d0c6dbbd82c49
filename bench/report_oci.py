"""The ward-oci section of docs/benchmarks.md, from bench/oci.sh's files.

Imported by bench/report.py; alone: python3 bench/report_oci.py bench/out
prints the section.
"""
import json, os, re, sys


def section(out):
    """The section's markdown, or "" when bench/oci.sh wrote nothing."""
    lines = []
    ctr = os.path.join(out, "oci-ctr.json")
    if os.path.exists(ctr):
        res = {r["command"]: r for r in json.load(open(ctr))["results"]}
        runc, ward = res.get("ctr-run-runc"), res.get("ctr-run-ward-oci")
        lines.append("## ward-oci through containerd\n")
        lines.append("`ctr run --rm --null-io --runc-binary RUNTIME --rootfs DIR ID /bin/true` (hyperfine, no shell, "
                     "median / min / max in ms): one containerd 1.6 started by bench/oci.sh, its runc shim "
                     "calling the runtime's create, start, delete; ctr reaches it through `nsenter` into its mount "
                     "namespace, on both sides.\n")
        lines.append("| command | median | min | max | ratio to runc's |")
        lines.append("|---|---|---|---|---|")
        for name, r in res.items():
            ratio = f"{r['median'] / runc['median']:.2f}x" if runc else ""
            lines.append(f"| {name} | {r['median'] * 1000:.2f} | {r['min'] * 1000:.2f} | {r['max'] * 1000:.2f} | {ratio} |")
        lines.append("")
        if runc and ward:
            lines.append(f"Through containerd, ward-oci's start-up is {ward['median'] / runc['median']:.2f}x runc's "
                         f"({ward['median'] * 1000:.1f} vs {runc['median'] * 1000:.1f} ms at the median); the shim and "
                         "containerd's own work are on both sides.\n")
    val = os.path.join(out, "oci-validation.txt")
    if os.path.exists(val):
        totals = {}
        for l in open(val):
            m = re.match(r"^== (\S+): ok (\d+) \(of them skip (\d+)\), not ok (\d+), in (\d+) s$", l.strip())
            if m:
                totals[os.path.basename(m.group(1))] = tuple(int(m.group(i)) for i in range(2, 6))
        if totals:
            lines.append("## The OCI validation suite\n")
            lines.append("integration/oci/validation.sh: the OCI runtime-tools validation suite (its 58 programs, built "
                         "once) against each runtime, one after the other on this machine; test points counted from "
                         "their TAP output. Target: ward-oci no fewer `ok` and no more `not ok` than runc "
                         "(docs/oci.md explains each failure).\n")
            lines.append("| runtime | ok | of them skip | not ok | seconds |")
            lines.append("|---|---|---|---|---|")
            for name, (ok, skip, bad, secs) in totals.items():
                lines.append(f"| {name} | {ok} | {skip} | {bad} | {secs} |")
            lines.append("")
            if "runc" in totals and "ward-oci" in totals:
                r, w = totals["runc"], totals["ward-oci"]
                met = "met" if w[0] >= r[0] and w[2] <= r[2] else "**not met**"
                lines.append(f"Target: {met} (ward-oci ok {w[0]}, not ok {w[2]}; runc ok {r[0]}, not ok {r[2]}).\n")
    return "\n".join(lines)


if __name__ == "__main__":
    print(section(sys.argv[1] if len(sys.argv) > 1 else "bench/out"))
