"""The Delta protocol as data: actions, schemas, table features, configuration, deletion
vectors, partition values, predicates and the JSON form of file actions.

Nothing here reads a log or a table; every other room of the core builds on these definitions.
"""
