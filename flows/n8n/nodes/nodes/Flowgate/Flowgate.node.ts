import type {
	ICredentialsDecrypted,
	ICredentialTestFunctions,
	IDataObject,
	IExecuteFunctions,
	INodeCredentialTestResult,
	INodeExecutionData,
	INodeType,
	INodeTypeDescription,
} from 'n8n-workflow';
import { NodeApiError, NodeOperationError } from 'n8n-workflow';

import { bufferProperties, holdProperties, operationProperties, resourceProperty, taskProperties } from './descriptions';
import { runBuffer, runHold, runTask } from './actions';
import { call, FlowgateCredentials, FlowgateError, HttpContext } from './GenericFunctions';

// Flowgate: the VM task queue (create, claim, heartbeat, ACK, FAIL, get,
// requeue), the work buffer (enqueue, get, list) and slot holds (create,
// heartbeat, release). Every queue and ACK/FAIL call is signed with
// version 2 of flowgate's scheme and carries a nonce, so two identical
// calls in one second are two requests, not a replay.
export class Flowgate implements INodeType {
	description: INodeTypeDescription = {
		displayName: 'Flowgate',
		name: 'flowgate',
		icon: 'file:flowgate.svg',
		group: ['transform'],
		version: 1,
		subtitle: '={{ $parameter["operation"] + ": " + $parameter["resource"] }}',
		description: 'VM tasks signed for you, the work buffer and slot holds of flowgate',
		defaults: { name: 'Flowgate' },
		inputs: ['main'],
		outputs: ['main'],
		credentials: [{ name: 'flowgateApi', required: true, testedBy: 'flowgateApiTest' }],
		properties: [resourceProperty, ...operationProperties, ...taskProperties, ...bufferProperties, ...holdProperties],
	};

	methods = {
		credentialTest: {
			// flowgateApiTest calls GET /queue/stats signed (URL, HMAC
			// secret or webhook token) and, with a buffer token,
			// GET /api/buffer/stats.
			async flowgateApiTest(this: ICredentialTestFunctions, credential: ICredentialsDecrypted): Promise<INodeCredentialTestResult> {
				const creds = credential.data as unknown as FlowgateCredentials;
				const ctx: HttpContext = {
					helpers: {
						httpRequest: async (o) =>
							this.helpers.request({
								method: o.method, uri: o.url, headers: o.headers, body: o.body, resolveWithFullResponse: true,
								simple: false, followRedirect: false, timeout: o.timeout,
							}).then((r: any) => ({ statusCode: r.statusCode, headers: r.headers, body: r.body })),
					},
				};
				try {
					if (creds.hmacSecret || creds.webhookToken) await call(ctx, creds, 'GET', '/queue/stats', { auth: 'hmac' });
					else await call(ctx, creds, 'GET', '/healthz', { auth: 'none' });
					if (creds.bufferToken) await call(ctx, creds, 'GET', '/api/buffer/stats', { auth: 'buffer' });
				} catch (e) {
					const fe = e as FlowgateError;
					const reason = fe.details && fe.details.reason ? ` (${String(fe.details.reason)})` : '';
					return { status: 'Error', message: fe.message + reason };
				}
				return { status: 'OK', message: 'Connection successful' };
			},
		},
	};

	async execute(this: IExecuteFunctions): Promise<INodeExecutionData[][]> {
		const items = this.getInputData();
		const out: INodeExecutionData[] = [];
		const creds = (await this.getCredentials('flowgateApi')) as unknown as FlowgateCredentials;
		for (let i = 0; i < items.length; i++) {
			const resource = this.getNodeParameter('resource', i) as string;
			const operation = this.getNodeParameter('operation', i) as string;
			try {
				let results: IDataObject[];
				if (resource === 'task') results = await runTask(this, creds, operation, i);
				else if (resource === 'bufferMessage') results = await runBuffer(this, creds, operation, i);
				else results = await runHold(this, creds, operation, i);
				for (const json of results) out.push({ json, pairedItem: { item: i } });
			} catch (e) {
				if (this.continueOnFail()) {
					const fe = e instanceof FlowgateError ? e.toJSON() : { message: e instanceof Error ? e.message : String(e) };
					out.push({ json: { error: fe }, pairedItem: { item: i } });
					continue;
				}
				if (e instanceof FlowgateError && e.code === 'invalid' && e.status === 0) {
					throw new NodeOperationError(this.getNode(), e.message, { itemIndex: i });
				}
				if (e instanceof FlowgateError) {
					throw new NodeApiError(this.getNode(), e.toJSON() as never, {
						itemIndex: i, message: e.message, httpCode: e.status ? String(e.status) : undefined,
						description: e.details && e.details.reason ? 'reason: ' + String(e.details.reason) : undefined,
					});
				}
				throw new NodeOperationError(this.getNode(), e as Error, { itemIndex: i });
			}
		}
		return [out];
	}
}
