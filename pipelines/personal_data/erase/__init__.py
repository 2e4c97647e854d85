"""Erasure (GDPR Article 17) on an append-only lake: ``auditlake erase --user <luid or e-mail>``.

Rows are pseudonymised, never deleted, so every count the lake reconciles stays as it was
(bronze = silver + duplicates + quarantine, the file ledger's rows, gold = the silver rows it
covers). The steps, each in a module of its own (``run`` puts them in order):

1. **Resolve** the person (``person``): from the LUID or e-mail given, the identifiers silver holds for them
   (the catalogue's ``people``: the columns that describe one person within a row,
   pipelines/personal_data/catalogue.yaml), followed until no new
   LUID or e-mail turns up. Nobody found: ``PersonNotFound``, nothing changed.
2. **Pending** (``pending``, ``record``): before anything is rewritten, the erasure is written down: a state file under
   ``<checkpoints>/erasure_pending/`` (the identifiers, their tokens, the tables in order with their
   versions, the rows rewritten so far; the clear values a re-run needs, so not in a Delta table) and a row of
   ``ops.erasures`` with status ``pending`` (tokens only). A re-run of ``auditlake erase`` or the
   next refresh finishes a pending erasure first (``finish_pending_erasure``).
3. **Pseudonymise** (``rewrite``) every Delta table of the bronze, silver, ops and gold schemas, in that order:
   each identifier becomes its token, ``erased:<12 hex of sha256(salt + identifier)>`` (one token per
   identifier, so keys stay unique and joins still join). LUIDs and e-mails are replaced wherever
   they occur in a text (raw JSON lines included); names (sign-in and display names) only where a
   value is the whole name, or a JSON string holding it, so a name inside another word is left.
   One UPDATE per table rewrites the rows and counts them: the count is its commit's own
   (``numUpdatedRows``), kept in the state file after it. The commit carries the erasure id
   (Delta's commit ``userMetadata``), so a run killed between the commit and the save finds the
   count in the table's history; a table rewritten already matches no row, and Delta makes no commit.
   Tableau Server's log pieces in the landing folder (``landing``), the lake's own archive of
   Server's log files, are rewritten line by line the same way (each piece whole, its new content
   kept in the state file first) and recorded in ``ops.erased_files``: the file ledger takes that
   version for the landed one, and the signed record gives ``verify`` its new SHA-256. Tableau's
   deliveries are not the lake's: a line says how many still hold the person.
4. **Vacuum** (``vacuum``) every table touched with ``erase.vacuum_retain_hours``: the files that held the old
   values (and the change data feed's pre-images) are deleted, so time travel to a version before
   the erasure fails.
5. **Catch up** (``readers``) the readers of bronze: silver promotion reads only the rows bronze's appends
   inserted, never an erasure's rewrite; its promoted range moves past the erasure's commits where
   behind (a batch with no rows in ``ops.silver_batches``); the Write-Back stream skips commits that
   change rows. A gold build that was current still is.
6. **Record** (``record``) ``ops.erasures`` as done (when, rows per table, tables vacuumed), then delete the state
   file: no value that was erased outlives the erasure.
"""
