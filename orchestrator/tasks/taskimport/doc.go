// Package taskimport is `flowgate import-queue`: it reads the tasks of the
// old queue API that the n8n workflow managed (docs/import-queue.md: GET /queue, signed
// with X-Timestamp and X-Signature as package orchestrator/hmacsig computes
// them) and brings them into the task ledger through tasks.Importer.
//
// Statuses are read one after the other (PENDING, PROCESSING, ERROR, and
// DONE when asked), each paged on its own: GET /queue?status=S&limit=N&
// history=true, then &cursor=<next_cursor> while the answer has one
// (flowgate's own GET /queue shape); an answer without next_cursor (or a
// bare JSON array) is paged by &offset= while pages are full. Each page is
// imported (atomically per batch of tasks.MaxImportBatch) before the next
// is asked for, so a page that fails stops the run after what came before
// it; the import is idempotent by queue_id, so running it again resumes.
//
// One line is printed per task (imported / would-import, unchanged,
// conflict, invalid, skipped) and a summary table by status at the end.
package taskimport
