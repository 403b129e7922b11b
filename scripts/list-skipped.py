#!/usr/bin/env python3
"""Prints every skipped test of a ctest JUnit report with the reason it gave (the first
line of its output that says 'skip'), so that no test disappears without a word.

    list-skipped.py build/ctest-results.xml
"""
import sys
import xml.etree.ElementTree as ET

skipped = []
for case in ET.parse(sys.argv[1]).getroot().iter("testcase"):
    if case.find("skipped") is None:
        continue
    out = case.findtext("system-out") or ""
    reason = next((line.strip() for line in out.splitlines() if "skip" in line.lower()), "no reason printed")
    skipped.append((case.get("name"), reason))
print(f"{len(skipped)} tests skipped" + (":" if skipped else ""))
for name, reason in skipped:
    print(f"  {name}: {reason}")
