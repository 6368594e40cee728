#!/usr/bin/env python3
"""kernel/bench/ratio.py on made-up kcount output: which part of a call it
counts. A GUP call split in four counts its first pair (gup_test's pin),
a call without splits counts whole (io_uring), splits of another vCPU do
not count, and a call split otherwise leaves its cell's pin counts out."""
import importlib.util
import os
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
spec = importlib.util.spec_from_file_location(
    "ratio", os.path.join(HERE, "..", "kernel", "bench", "ratio.py"))
ratio = importlib.util.module_from_spec(spec)
spec.loader.exec_module(ratio)

PAGES = 256  # mb=1


def totals(insns, atomics=0, mem=0):
    return f"insns={insns} atomics={atomics} mem={mem}"


def gup_call(base, vcpu=0, splits=(100, 612, 700, 956), other_vcpu=()):
    """One marked call: begin at @base, splits at base + each, end."""
    lines = [f"mark=1 vcpu={vcpu} {totals(base, base)}"]
    for s in splits:
        lines.append(f"split vcpu={vcpu} {totals(base + s, base + s // 4)}")
    for s in other_vcpu:
        lines.append(f"split vcpu={vcpu + 1} {totals(base + s, base)}")
    lines.append(f"mark=2 vcpu={vcpu} {totals(base + 1024, base + 512)}")
    return lines


def row(test):
    return (f"folio=64kB test={test} write=1 mb=1 median_us=10 "
            "folios=16x64kB pmd_kb=0")


class RatioSplit(unittest.TestCase):
    def load(self, kbench, kcount):
        with tempfile.TemporaryDirectory() as d:
            with open(os.path.join(d, "kbench.txt"), "w") as f:
                f.write("kernel: test\n" + "\n".join(kbench) + "\n")
            with open(os.path.join(d, "kcount.txt"), "w") as f:
                f.write("\n".join(kcount) + "\n")
            return ratio.load(d)[1]

    def test_pin_uring_and_odd_calls(self):
        kcount = ["split_at=ffffffff81000000"]
        kcount += gup_call(0, other_vcpu=(300,)) + ["mark=3 vcpu=0 " +
                                                    totals(2000)]
        kcount += gup_call(5000, splits=()) + ["mark=3 vcpu=0 " +
                                               totals(7000)]
        kcount += gup_call(9000, splits=(1, 2)) + ["mark=3 vcpu=0 " +
                                                   totals(11000)]
        cells = self.load([row("longterm"), row("uring"), row("pinfast")],
                          kcount)
        pin = cells[("64kB", "longterm", "1", "1")]
        self.assertEqual(pin["insns_pp"], 512 / PAGES)
        self.assertEqual(pin["atomics_pp"], (153 - 25) / PAGES)
        self.assertEqual(pin["insns_call_pp"], 1024 / PAGES)
        self.assertEqual(pin["atomics_call_pp"], 512 / PAGES)
        uring = cells[("64kB", "uring", "1", "1")]
        self.assertEqual(uring["insns_pp"], 1024 / PAGES)
        odd = cells[("64kB", "pinfast", "1", "1")]
        self.assertNotIn("insns_pp", odd)
        self.assertEqual(odd["insns_call_pp"], 1024 / PAGES)

    def test_unsplit_run_counts_whole_calls_only(self):
        kcount = gup_call(0, splits=()) + ["mark=3 vcpu=0 " + totals(2000)]
        cells = self.load([row("longterm")], kcount)
        cell = cells[("64kB", "longterm", "1", "1")]
        self.assertNotIn("insns_pp", cell)
        self.assertEqual(cell["insns_call_pp"], 1024 / PAGES)
        columns, note = ratio.count_columns(cells)
        self.assertEqual(note, ratio.CALL_NOTE)
        self.assertEqual([k for _, k in columns],
                         ["insns_call_pp", "atomics_call_pp", "mem_call_pp"])


if __name__ == "__main__":
    sys.exit(unittest.main())
