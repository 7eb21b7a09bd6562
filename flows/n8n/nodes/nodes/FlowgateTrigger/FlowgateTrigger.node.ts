import type {
	IDataObject,
	INodeType,
	INodeTypeDescription,
	IRun,
	ITriggerFunctions,
	ITriggerResponse,
} from 'n8n-workflow';
import { NodeOperationError } from 'n8n-workflow';

import { call, FlowgateCredentials, FlowgateError } from '../Flowgate/GenericFunctions';
import { cutBytes, MAX_CLAIM, MAX_ERROR_BYTES, MAX_WAIT_MS, permanent } from './limits';
import { outcome } from './outcome';

// Flowgate Trigger: a VM worker as a workflow. While the workflow is active
// it claims tasks with a long poll (POST /queue/claim, wait_ms), starts one
// execution per task (the item is the task: queue_id, encounter_id,
// payload, …), heartbeats the task while the execution runs, and — with
// "ACK/FAIL: when the execution finishes" — ACKs it with the last node's
// output or FAILs it with the execution's error, as n8n's RabbitMQ trigger
// acknowledges a message when the execution finishes. With "by a Flowgate
// node" the workflow closes the task itself (Flowgate node, ACK or FAIL).
//
// flowgate's bounds: a claim's wait_ms is 0..20000 and its limit 1..50
// (400 otherwise), so the options stop there and the code clamps to them.
// A claim refused with a 4xx other than 408/429 (a wrong secret, URL or
// clock, or a bound flowgate lowered) is a configuration error, not a
// passing one: the trigger reports it to n8n (emitError: the workflow shows
// it as an activation error, the error workflow runs, n8n retries the
// activation with its own backoff) instead of retrying it silently. Each
// activation's first claim is made before the trigger returns, so such an
// error fails the activation itself, where the editor shows it.

export class FlowgateTrigger implements INodeType {
	description: INodeTypeDescription = {
		displayName: 'Flowgate Trigger',
		name: 'flowgateTrigger',
		icon: 'file:flowgate.svg',
		group: ['trigger'],
		version: 1,
		description: 'Claims flowgate VM tasks and starts one execution per task; ACK or FAIL from the outcome',
		eventTriggerDescription: 'Waiting for a flowgate task',
		defaults: { name: 'Flowgate Trigger' },
		inputs: [],
		outputs: ['main'],
		credentials: [{ name: 'flowgateApi', required: true }],
		properties: [
			{
				displayName: 'Worker ID',
				name: 'workerId',
				type: 'string',
				default: '',
				description: 'Who claims the tasks; empty: n8n-{workflow ID}',
			},
			{
				displayName: 'ACK/FAIL',
				name: 'completion',
				type: 'options',
				options: [
					{
						name: 'When the Execution Finishes',
						value: 'execution',
						description: "ACK with the last node's output when the execution succeeds, FAIL with its error when it fails",
					},
					{
						name: 'By a Flowgate Node in the Workflow',
						value: 'workflow',
						description: 'The workflow ACKs or FAILs the task itself (Flowgate node, Task: ACK or FAIL)',
					},
				],
				default: 'execution',
			},
			{
				displayName: 'Options',
				name: 'options',
				type: 'collection',
				placeholder: 'Add Option',
				default: {},
				options: [
					{
						displayName: 'Heartbeat Interval (S)',
						name: 'heartbeatS',
						type: 'number',
						typeOptions: { minValue: 1 },
						default: 30,
						description: "How often a running task's heartbeat is sent; flowgate recovers a task silent for HEARTBEAT_STALE_AFTER (2 min)",
					},
					{
						displayName: 'Max Tasks at Once',
						name: 'concurrency',
						type: 'number',
						typeOptions: { minValue: 1, maxValue: MAX_CLAIM },
						default: 1,
						description: 'How many executions may run at once (at most 50, what one claim may take); the trigger claims no more until one ends',
					},
					{
						displayName: 'Long Poll (Ms)',
						name: 'waitMs',
						type: 'number',
						typeOptions: { minValue: 0, maxValue: MAX_WAIT_MS },
						default: 20000,
						description: 'How long each claim waits at flowgate for a task when none is pending (at most 20000, flowgate\'s limit)',
					},
				],
			},
		],
	};

	async trigger(this: ITriggerFunctions): Promise<ITriggerResponse> {
		const creds = (await this.getCredentials('flowgateApi')) as unknown as FlowgateCredentials;
		const workerId = String(this.getNodeParameter('workerId', '') || '').trim() || 'n8n-' + String(this.getWorkflow().id || 'workflow');
		const completion = this.getNodeParameter('completion', 'execution') as string;
		const o = this.getNodeParameter('options', {}) as IDataObject;
		const heartbeatMs = Math.max(1, Number(o.heartbeatS) || 30) * 1000;
		const concurrency = Math.min(MAX_CLAIM, Math.max(1, Math.floor(Number(o.concurrency) || 1)));
		const waitMs = Math.min(MAX_WAIT_MS, Math.max(0, Math.floor(o.waitMs === undefined ? MAX_WAIT_MS : Number(o.waitMs) || 0)));
		const abort = new AbortController();
		let closed = false;
		let running = 0;
		let wake: (() => void) | undefined;
		const sleep = (ms: number) => new Promise<void>((resolve) => {
			const t = setTimeout(resolve, ms);
			wake = () => { clearTimeout(t); resolve(); };
		});

		const claim = async (limit: number, wait: number, timeout = 30000 + wait): Promise<IDataObject[]> => {
			const ans = await call(this, creds, 'POST', '/queue/claim', {
				auth: 'hmac', body: { worker_id: workerId, limit: Math.min(MAX_CLAIM, limit), wait_ms: wait }, timeout, abortSignal: abort.signal,
			});
			return ans.status === 204 || !ans.body ? [] : (ans.body.tasks as IDataObject[]) || [];
		};

		// A claim flowgate refuses with a 4xx (but 408/429), or one that
		// cannot be sent (an invalid URL), is a configuration error: the
		// same claim will be refused again.
		const misconfigured = (e: unknown): e is FlowgateError =>
			e instanceof FlowgateError && (permanent(e) || e.code === 'config');
		const claimRefused = (e: FlowgateError) => {
			const reason = e.details && e.details.reason ? ` (reason: ${String(e.details.reason)})` : '';
			return new NodeOperationError(this.getNode(), `Flowgate refuses the trigger's claim: ${e.message}${reason}`, {
				description: 'A configuration error, not retried by the trigger: check the Flowgate API credential (URL, HMAC secret or webhook token, signature version), this host\'s clock and the trigger\'s options, then activate the workflow again.',
			});
		};

		// report ACKs or FAILs a task, a few times while flowgate does not
		// answer (each try signed anew, with its own nonce).
		const report = async (task: IDataObject, ack: boolean, value: IDataObject | string): Promise<void> => {
			const body: IDataObject = { queue_id: task.queue_id, encounter_id: task.encounter_id, worker_id: workerId };
			if (ack) body.experityActions = value as IDataObject;
			else body.error_message = cutBytes(String(value), MAX_ERROR_BYTES);
			for (let attempt = 1; ; attempt++) {
				try {
					await call(this, creds, 'POST', ack ? '/ack' : '/fail', { auth: 'hmac', body, v1ok: true });
					return;
				} catch (e) {
					const fe = e as FlowgateError;
					if (attempt < 5 && !permanent(fe)) {
						await new Promise((r) => setTimeout(r, 1000 * attempt));
						continue;
					}
					this.logger.error(`Flowgate Trigger: ${ack ? 'ACK' : 'FAIL'} of task ${String(task.queue_id)} failed: ${fe.message}`);
					// An ACK refused for good (413: the result is over
					// flowgate's body limit; 400) would leave the task
					// PROCESSING until the heartbeat monitor takes it back
					// and the work reruns, with no word of why: FAIL it,
					// saying why. Not after 401/403 (a FAIL is refused
					// alike), 404 (no such task) or 409 (the task is no
					// longer this worker's, or DONE with other actions).
					if (ack && permanent(fe) && fe.status !== 401 && fe.status !== 403 && fe.status !== 404 && fe.status !== 409) {
						await report(task, false, `flowgate refused the ACK of the execution's result, which was not recorded: ${fe.message}`);
					}
					return;
				}
			}
		};

		// run starts one execution for task, heartbeats it while it runs and
		// closes the task from its outcome.
		const run = async (task: IDataObject) => {
			let beating = true;
			const timer = setInterval(() => {
				if (!beating) return;
				call(this, creds, 'POST', `/queue/${encodeURIComponent(String(task.queue_id))}/heartbeat`, { auth: 'hmac', body: { worker_id: workerId } })
					.catch((e: FlowgateError) => {
						// 404/409: the task is no longer ours (ACKed by the workflow, recovered): stop.
						if (e.status === 404 || e.status === 409) beating = false;
						else this.logger.warn(`Flowgate Trigger: heartbeat of task ${String(task.queue_id)}: ${e.message}`);
					});
			}, heartbeatMs);
			try {
				const done = this.helpers.createDeferredPromise<IRun>();
				this.emit([[{ json: task }]], undefined, done);
				const result = await done.promise.catch((e: Error) => ({ error: e }) as unknown as IRun);
				beating = false;
				clearInterval(timer);
				if (completion !== 'execution') return;
				const out = outcome(result);
				if (out.ack) await report(task, true, out.result);
				else await report(task, false, out.error);
			} finally {
				beating = false;
				clearInterval(timer);
			}
		};

		const start = (tasks: IDataObject[]) => {
			for (const task of tasks) {
				running++;
				void run(task).finally(() => {
					running--;
					if (wake) wake();
				});
			}
		};

		const loop = async (first: IDataObject[]) => {
			// The first claim's tasks start once trigger() has returned.
			await new Promise((r) => setImmediate(r));
			start(first);
			let backoff = 1000;
			while (!closed) {
				if (running >= concurrency) {
					await sleep(60000);
					continue;
				}
				let tasks: IDataObject[];
				try {
					tasks = await claim(concurrency - running, waitMs);
					backoff = 1000;
				} catch (e) {
					if (closed) return;
					if (misconfigured(e)) {
						// Not a passing failure: n8n shows it, runs the error
						// workflow, closes this trigger and retries the
						// activation (whose first claim fails it until fixed).
						closed = true;
						this.logger.error(`Flowgate Trigger: claim refused, the trigger stops: ${e.message}`);
						this.emitError(claimRefused(e));
						return;
					}
					this.logger.warn(`Flowgate Trigger: claim failed, again in ${backoff} ms: ${(e as Error).message}`);
					await sleep(backoff);
					backoff = Math.min(backoff * 2, 30000);
					continue;
				}
				start(tasks);
			}
		};

		if (this.getMode() === 'manual') {
			// In the editor ("Test workflow"): one task, waited for, with no
			// ACK/FAIL of its own: the test run's Flowgate node may close it,
			// or flowgate recovers it once its heartbeat is stale.
			return {
				manualTriggerFunction: async () => {
					let tasks: IDataObject[];
					try {
						tasks = await claim(1, waitMs);
					} catch (e) {
						throw misconfigured(e) ? claimRefused(e) : e;
					}
					if (!tasks.length) throw new NodeOperationError(this.getNode(), `No task to claim within ${waitMs} ms`);
					this.emit([tasks.map((json) => ({ json }))]);
				},
				closeFunction: async () => {
					closed = true;
					abort.abort();
				},
			};
		}

		// The first claim, before the trigger returns: a configuration error
		// fails the activation, shown in the editor (n8n retries an
		// activation that fails at its start with a growing delay). Any other
		// failure is left to the loop's backoff.
		let first: IDataObject[] = [];
		try {
			first = await claim(concurrency, 0, 10000);
		} catch (e) {
			if (misconfigured(e)) throw claimRefused(e);
			this.logger.warn(`Flowgate Trigger: claim failed, the loop claims again: ${(e as Error).message}`);
		}
		void loop(first);
		return {
			closeFunction: async () => {
				closed = true;
				abort.abort();
				if (wake) wake();
			},
		};
	}
}
