"""Reading data: scan planning, data skipping, one data file into logical columns, and file
statistics (`scan.stats`: numRecords and per-column bounds, parsed or searched in the text).
"""
