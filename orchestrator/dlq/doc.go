// Package dlq keeps the durable dead-letter record: every task that failed
// for good, whatever queue it came from. Asynq's own archive is what
// Asynqmon shows and replays, but asynq trims it at 10,000 tasks per queue
// and after 90 days without a word; this record is trimmed by nobody but an
// operator deleting an entry on purpose.
//
// Writers: package asynqrt's asynq ErrorHandler (on the final
// failure of a task, while the error is fresh) and the Reconciler, a cron job
// that copies anything in asynq's archive not yet recorded (a task whose
// worker crashed is archived by asynq's recoverer and never reaches the
// ErrorHandler); and package tasks/taskjobs, which records the VM task
// ledger's dead letters when it archives their replay tasks.
package dlq
