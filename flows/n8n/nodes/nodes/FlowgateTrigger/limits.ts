// flowgate's bounds on what the Flowgate Trigger sends, and which refusals
// are worth retrying.
import type { FlowgateError } from '../Flowgate/GenericFunctions';

/** flowgate's largest claim wait_ms (POST /queue/claim: "wait_ms must be 0..20000"). */
export const MAX_WAIT_MS = 20000;
/** flowgate's largest claim limit ("limit must be 1..50"). */
export const MAX_CLAIM = 50;
/** flowgate keeps the first 4096 bytes of a FAIL's error_message (contracts.MaxErrorMessageBytes). */
export const MAX_ERROR_BYTES = 4096;

/** Whether a refused call is a configuration error (any 4xx but 408 and 429), not worth retrying. */
export function permanent(e: FlowgateError): boolean {
	return e.status >= 400 && e.status < 500 && e.status !== 408 && e.status !== 429;
}

/** s cut to at most max UTF-8 bytes, on a character boundary. */
export function cutBytes(s: string, max: number): string {
	if (Buffer.byteLength(s, 'utf8') <= max) return s;
	let out = '';
	let n = 0;
	for (const ch of s) {
		const b = Buffer.byteLength(ch, 'utf8');
		if (n + b > max - 3) break;
		out += ch;
		n += b;
	}
	return out + '…';
}
