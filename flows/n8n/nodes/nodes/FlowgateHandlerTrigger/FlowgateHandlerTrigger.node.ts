import type {
	IDataObject,
	INodeType,
	INodeTypeDescription,
	IWebhookFunctions,
	IWebhookResponseData,
} from 'n8n-workflow';

import { ReplayCache, TOLERANCE_S, verifyDelivery } from '../Flowgate/signature';

// Flowgate Handler Trigger: a work-buffer handler as a workflow. flowgate
// POSTs each message of a type declared in its handlers file
// (BUFFER_HANDLERS_FILE, `url:` this node's production URL) and reads the
// answer: 2xx completes the message (the answer's JSON is its result), 408,
// 429 and 5xx are retried with backoff, any other 4xx dead-letters it.
// The node verifies flowgate's signature (version 1 or 2, ±300 s) and the
// delivery's own, X-Buffer-Signature (which message and attempt it is), with
// the handler secret, each delivery once, and answers 401 otherwise. With no
// secret in the credential it refuses every delivery (500, so flowgate
// retries it once the secret is set) rather than verify with an empty key.

// The headers flowgate's buffer sends with a handler POST.
const H_ID = 'x-buffer-message-id';
const H_ATTEMPT = 'x-buffer-attempt';
const H_TYPE = 'x-buffer-type';

const replay = new ReplayCache(2 * TOLERANCE_S * 1000);

export class FlowgateHandlerTrigger implements INodeType {
	description: INodeTypeDescription = {
		displayName: 'Flowgate Handler Trigger',
		name: 'flowgateHandlerTrigger',
		icon: 'file:flowgate.svg',
		group: ['trigger'],
		version: 1,
		description: "Runs the workflow for each work-buffer message flowgate delivers to this handler's URL, signature verified",
		eventTriggerDescription: 'Waiting for flowgate to deliver a buffer message',
		defaults: { name: 'Flowgate Handler Trigger' },
		inputs: [],
		outputs: ['main'],
		credentials: [{ name: 'flowgateHandlerApi', required: true }],
		webhooks: [
			{
				name: 'default',
				httpMethod: 'POST',
				responseMode: '={{$parameter["responseMode"]}}',
				path: '={{$parameter["path"]}}',
				isFullPath: true,
			},
		],
		properties: [
			{
				displayName: 'Path',
				name: 'path',
				type: 'string',
				default: 'flowgate/handler',
				required: true,
				placeholder: 'flowgate/email',
				description: "The handler's path: flowgate's handlers file gets this node's production URL as the type's URL",
			},
			{
				displayName: 'Respond',
				name: 'responseMode',
				type: 'options',
				options: [
					{
						name: 'When Last Node Finishes',
						value: 'lastNode',
						description: "200 with the last node's output completes the message; an error in the workflow (500) has flowgate retry it",
					},
					{
						name: "Using 'Respond to Webhook' Node",
						value: 'responseNode',
						description: 'The workflow chooses: 2xx done, 408/429/5xx retried, other 4xx dead-lettered',
					},
					{
						name: 'Immediately',
						value: 'onReceived',
						description: 'Completes the message as soon as it is received, before the workflow runs',
					},
				],
				default: 'lastNode',
			},
		],
	};

	async webhook(this: IWebhookFunctions): Promise<IWebhookResponseData> {
		const req = this.getRequestObject();
		const res = this.getResponseObject();
		const headers = req.headers as Record<string, string | string[] | undefined>;
		const h = (name: string) => {
			const v = headers[name];
			return String((Array.isArray(v) ? v[0] : v) || '');
		};
		const creds = await this.getCredentials('flowgateHandlerApi');
		const secret = creds && typeof creds.secret === 'string' ? creds.secret : '';
		if (!secret) {
			// Fail closed: an HMAC with an empty key proves nothing. 500, not
			// 401: flowgate retries it (a 401 would dead-letter the message).
			const message = 'the Flowgate Handler API credential has no Handler Secret: set it to flowgate\'s OUTBOUND_HMAC_SECRET (or the handler\'s secret:); every delivery is refused until then';
			this.logger.error(`Flowgate Handler Trigger: ${message}`);
			res.status(500).json({ success: false, error: { code: 'internal', message, details: { reason: 'no_secret' } } });
			return { noWebhookResponse: true };
		}
		// The signature covers the bytes flowgate sent: n8n keeps them as
		// req.rawBody beside the parsed body.
		const raw = (req as unknown as { rawBody?: Buffer }).rawBody;
		const body = Buffer.isBuffer(raw) ? raw : Buffer.from(typeof req.body === 'string' ? req.body : JSON.stringify(req.body ?? ''), 'utf8');
		const refused = verifyDelivery(secret, { method: req.method, target: req.originalUrl || req.url, headers, body }, replay);
		if (refused) {
			res.status(refused.status).json({
				success: false,
				error: { code: refused.code, message: refused.message, details: { reason: refused.reason } },
			});
			return { noWebhookResponse: true };
		}
		let parsed: unknown = req.body;
		if (Buffer.isBuffer(raw)) {
			try {
				parsed = raw.length ? JSON.parse(raw.toString('utf8')) : {};
			} catch (e) {
				parsed = raw.toString('utf8');
			}
		}
		// Two shapes: the payload alone with the message id in headers
		// (body: payload, the default), or the whole message (body: message).
		const whole = parsed && typeof parsed === 'object' && !Array.isArray(parsed) && 'messageId' in (parsed as IDataObject) && 'payload' in (parsed as IDataObject);
		const msg = whole ? (parsed as IDataObject) : undefined;
		const item: IDataObject = {
			messageId: h(H_ID) || (msg ? String(msg.messageId) : ''),
			type: h(H_TYPE) || (msg && msg.type ? String(msg.type) : ''),
			attempt: Number(h(H_ATTEMPT)) || (msg && msg.attempt ? Number(msg.attempt) : 1),
			payload: (msg ? msg.payload : parsed) as IDataObject,
		};
		if (msg) item.message = msg;
		return { workflowData: [[{ json: item }]] };
	}
}
