"""Tableau Server's Activity Log files as a source.

Tableau Server with Advanced Management writes its Activity Log events to log files on each node
(``<process>-cepp-canonical-events_*.log`` in the ``backgrounder``, ``dataserver``, ``vizportal``
and ``vizqlserver`` log folders). They are not deliveries: a file grows while its process writes
it, is rotated, and is deleted by ``tsm maintenance cleanup``, so the lake is their only archive.

A refresh first copies what each file gained since the last copy, complete lines only, into the
landing tree as immutable pieces (``server/…``, ``bronze/layout.py``), which bronze then lands by
its file ledger as it lands any file: ``discover`` finds the files (folders and ``ziplogs``
archives), ``offsets`` keeps how far each file was copied, by the file's identity (its first line,
not its name: a rotated file keeps its identity, a new file at an old name has another), and
``copy`` writes the pieces.
"""
