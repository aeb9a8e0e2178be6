"""Reading the transaction log: file names, `_last_checkpoint`, listing and segments, the JSON
log, checkpoints and sidecars, replay, commit timestamps, `.crc` files, catalog-managed commits,
and the state of one version (`TableState`) that they add up to.
"""
