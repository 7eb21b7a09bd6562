import type { ICredentialType, INodeProperties } from 'n8n-workflow';

// flowgateApi: where flowgate listens and the secrets its API checks. The
// Flowgate node signs every queue and ACK/FAIL call with the HMAC secret
// (version 2, with a nonce) and sends the buffer token to the work buffer;
// holds need none. The Flowgate node's credential test calls both.
export class FlowgateApi implements ICredentialType {
	name = 'flowgateApi';

	displayName = 'Flowgate API';

	documentationUrl = 'https://github.com/flowgate/flowgate/blob/main/flows/n8n/nodes/README.md';

	icon = 'file:flowgate.svg' as const;

	properties: INodeProperties[] = [
		{
			displayName: 'Base URL',
			name: 'baseUrl',
			type: 'string',
			default: 'http://flowgate:8080',
			placeholder: 'http://flowgate:8080',
			description: 'Where flowgate listens',
			required: true,
		},
		{
			displayName: 'HMAC Secret',
			name: 'hmacSecret',
			type: 'string',
			typeOptions: { password: true },
			default: '',
			description: "Flowgate's HMAC_SECRET: signs the task queue's calls and ACK/FAIL",
		},
		{
			displayName: 'Webhook Token',
			name: 'webhookToken',
			type: 'string',
			typeOptions: { password: true },
			default: '',
			description: "Flowgate's WEBHOOK_TOKEN, only where flowgate runs with WEBHOOK_AUTH=token",
		},
		{
			displayName: 'Buffer API Token',
			name: 'bufferToken',
			type: 'string',
			typeOptions: { password: true },
			default: '',
			description: "Flowgate's BUFFER_API_TOKEN: the work buffer's bearer token",
		},
		{
			displayName: 'Signature Version',
			name: 'signatureVersion',
			type: 'options',
			options: [
				{ name: '2: Method and Path Signed (Default)', value: '2' },
				{ name: '1: Only on Create, ACK, FAIL, Behind a Path-Rewriting Proxy', value: '1' },
			],
			default: '2',
			description: 'Version 2 binds each signature to its route; version 1 is the seed\'s scheme, for a proxy that rewrites paths',
		},
	];
}
