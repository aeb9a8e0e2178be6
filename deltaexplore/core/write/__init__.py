"""Writing a table: transactions and their conflict rules, the rules for actions and rows,
schema evolution, data files, checkpoints, `.crc` files, post-commit work and log cleanup.
"""
