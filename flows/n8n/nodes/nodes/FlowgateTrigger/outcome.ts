// outcome reads a finished execution: ACK with the last executed node's
// first output item, or FAIL with the execution's error message.
import type { IDataObject, IRun } from 'n8n-workflow';

export type Outcome = { ack: true; result: IDataObject } | { ack: false; error: string };

export function outcome(run: IRun | undefined | null): Outcome {
	if (!run || !run.data || !run.data.resultData) {
		const err = run && (run as unknown as { error?: Error }).error;
		return { ack: false, error: err && err.message ? err.message : 'the execution ended without a result' };
	}
	const rd = run.data.resultData;
	if (rd.error) {
		return { ack: false, error: rd.error.message || String(rd.error) };
	}
	if (run.status === 'canceled' || run.status === 'crashed') {
		return { ack: false, error: `the execution was ${run.status}` };
	}
	const last = rd.lastNodeExecuted;
	const runs = last ? rd.runData[last] : undefined;
	const main = runs && runs.length ? runs[runs.length - 1].data?.main : undefined;
	const first = main && main[0] && main[0][0];
	return { ack: true, result: first && first.json ? first.json : {} };
}
