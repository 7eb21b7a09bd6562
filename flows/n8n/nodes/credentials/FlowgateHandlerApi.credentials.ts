import type { ICredentialType, INodeProperties } from 'n8n-workflow';

// flowgateHandlerApi: the secret flowgate signs its handler deliveries
// with, for the Flowgate Handler Trigger to verify. It is
// OUTBOUND_HMAC_SECRET or the handler's own `secret:`, never HMAC_SECRET:
// a receiver sees every delivery, so one signed with the secret flowgate
// verifies could be replayed at flowgate's /ack.
export class FlowgateHandlerApi implements ICredentialType {
	name = 'flowgateHandlerApi';

	displayName = 'Flowgate Handler API';

	documentationUrl = 'https://github.com/flowgate/flowgate/blob/main/flows/n8n/nodes/README.md';

	icon = 'file:flowgate.svg' as const;

	properties: INodeProperties[] = [
		{
			displayName: 'Handler Secret',
			name: 'secret',
			type: 'string',
			typeOptions: { password: true },
			default: '',
			required: true,
			description: "Flowgate's OUTBOUND_HMAC_SECRET, or the handler's own secret: in flowgate's handlers file. Never HMAC_SECRET.",
		},
	];
}
