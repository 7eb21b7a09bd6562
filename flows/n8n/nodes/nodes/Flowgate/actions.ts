// The Flowgate node's operations: each builds its flowgate call from the
// item's parameters and returns the items it outputs. Input that cannot be
// sent is a FlowgateError with code invalid and status 0 (nothing sent).
import type { IDataObject, IExecuteFunctions } from 'n8n-workflow';

import { Answer, call, FlowgateCredentials, FlowgateError, holdRef } from './GenericFunctions';

/** JSON from a json parameter (a string, or an object from an expression). */
function jsonParam(ctx: IExecuteFunctions, name: string, i: number): unknown {
	const v = ctx.getNodeParameter(name, i, '{}');
	if (typeof v !== 'string') return v;
	if (v.trim() === '') return {};
	try {
		return JSON.parse(v);
	} catch (e) {
		throw new FlowgateError(`${name} is not valid JSON: ${(e as Error).message}`, { code: 'invalid', details: { field: name } });
	}
}

function str(ctx: IExecuteFunctions, name: string, i: number): string {
	const v = ctx.getNodeParameter(name, i, '');
	return v === undefined || v === null ? '' : String(v).trim();
}

function required(ctx: IExecuteFunctions, name: string, i: number, what: string): string {
	const v = str(ctx, name, i);
	if (!v) throw new FlowgateError(`no ${what}: set the ${name} field`, { code: 'invalid', details: { field: name } });
	return v;
}

function defaultWorker(ctx: IExecuteFunctions): string {
	return 'n8n-' + String(ctx.getWorkflow().id || 'workflow');
}

const id = encodeURIComponent;

export async function runTask(ctx: IExecuteFunctions, creds: FlowgateCredentials, op: string, i: number): Promise<IDataObject[]> {
	const body = (b: IDataObject): Answer['body'] => b;
	switch (op) {
	case 'create': {
		const o = ctx.getNodeParameter('createOptions', i, {}) as IDataObject;
		const b: IDataObject = { encounter_id: required(ctx, 'encounterId', i, 'encounter ID'), payload: jsonParam(ctx, 'payload', i) as IDataObject };
		if (o.priority) b.priority = o.priority;
		if (o.maxAttempts !== undefined) b.max_attempts = Number(o.maxAttempts);
		if (o.queueId) b.queue_id = String(o.queueId).trim();
		const ans = await call(ctx, creds, 'POST', '/queue', { auth: 'hmac', body: body(b), v1ok: true });
		return [ans.body];
	}
	case 'claim': {
		const wait = Math.max(0, Math.floor(Number(ctx.getNodeParameter('waitMs', i, 0))));
		const b = { worker_id: str(ctx, 'workerId', i) || defaultWorker(ctx), limit: Math.max(1, Math.floor(Number(ctx.getNodeParameter('limit', i, 1)))), wait_ms: wait };
		const ans = await call(ctx, creds, 'POST', '/queue/claim', { auth: 'hmac', body: b, timeout: 30000 + wait });
		return ans.status === 204 || !ans.body ? [] : (ans.body.tasks as IDataObject[]) || [];
	}
	case 'heartbeat': {
		const q = required(ctx, 'queueId', i, 'queue ID');
		const ans = await call(ctx, creds, 'POST', `/queue/${id(q)}/heartbeat`, { auth: 'hmac', body: { worker_id: str(ctx, 'workerId', i) || defaultWorker(ctx) } });
		return [ans.body.task || ans.body];
	}
	case 'ack':
	case 'fail': {
		const b: IDataObject = { queue_id: required(ctx, 'queueId', i, 'queue ID'), encounter_id: str(ctx, 'reportEncounterId', i) };
		const w = str(ctx, 'workerId', i);
		if (w) b.worker_id = w;
		if (op === 'ack') b.experityActions = jsonParam(ctx, 'experityActions', i) as IDataObject;
		else b.error_message = str(ctx, 'errorMessage', i) || 'failed in n8n';
		const ans = await call(ctx, creds, 'POST', op === 'ack' ? '/ack' : '/fail', { auth: 'hmac', body: b, v1ok: true });
		return [ans.body];
	}
	case 'get': {
		const ans = await call(ctx, creds, 'GET', `/queue/${id(required(ctx, 'queueId', i, 'queue ID'))}`, { auth: 'hmac' });
		return [ans.body.task || ans.body];
	}
	case 'requeue': {
		const q = required(ctx, 'queueId', i, 'queue ID');
		const ans = await call(ctx, creds, 'PATCH', `/queue/${id(q)}/requeue`, { auth: 'hmac', body: { priority: str(ctx, 'requeuePriority', i) || 'HIGH' } });
		return [ans.body];
	}
	}
	throw new FlowgateError(`unknown task operation ${op}`, { code: 'invalid' });
}

export async function runBuffer(ctx: IExecuteFunctions, creds: FlowgateCredentials, op: string, i: number): Promise<IDataObject[]> {
	switch (op) {
	case 'enqueue': {
		const o = ctx.getNodeParameter('enqueueOptions', i, {}) as IDataObject;
		const b: IDataObject = { type: required(ctx, 'messageType', i, 'message type'), payload: jsonParam(ctx, 'payload', i) as IDataObject };
		if (o.priority !== undefined && o.priority !== '') b.priority = Number(o.priority);
		if (o.maxRetries !== undefined) b.maxRetries = Number(o.maxRetries);
		if (o.messageId) b.messageId = String(o.messageId).trim();
		if (o.idempotencyKey) b.idempotencyKey = String(o.idempotencyKey).trim();
		const ans = await call(ctx, creds, 'POST', '/api/buffer/enqueue', { auth: 'buffer', body: b });
		return [ans.body];
	}
	case 'get': {
		const ans = await call(ctx, creds, 'GET', `/api/buffer/messages/${id(required(ctx, 'messageId', i, 'message ID'))}`, { auth: 'buffer' });
		return [ans.body];
	}
	case 'list': {
		const f = ctx.getNodeParameter('listFilters', i, {}) as IDataObject;
		const query: Array<[string, string]> = [['state', str(ctx, 'state', i) || 'pending']];
		if (f.type) query.push(['type', String(f.type)]);
		if (f.limit) query.push(['limit', String(f.limit)]);
		const ans = await call(ctx, creds, 'GET', '/api/buffer/messages', { auth: 'buffer', query });
		const list = ans.body && Array.isArray(ans.body.messages) ? (ans.body.messages as IDataObject[]) : [];
		return list;
	}
	}
	throw new FlowgateError(`unknown buffer message operation ${op}`, { code: 'invalid' });
}

export async function runHold(ctx: IExecuteFunctions, creds: FlowgateCredentials, op: string, i: number): Promise<IDataObject[]> {
	const clientId = required(ctx, 'clientId', i, 'client ID');
	switch (op) {
	case 'create': {
		const b: IDataObject = {
			appointmentTypeId: required(ctx, 'appointmentTypeId', i, 'appointment type ID'),
			slotStartDate: required(ctx, 'slotStartDate', i, 'slot start date'),
			clientId,
		};
		const sp = str(ctx, 'specialistId', i);
		if (sp) b.specialistId = sp;
		const ans = await call(ctx, creds, 'POST', '/v1/holds', { auth: 'none', body: b });
		return [{ clientId, appointmentTypeId: b.appointmentTypeId, ...ans.body }];
	}
	case 'heartbeat': {
		const holdId = required(ctx, 'holdId', i, 'hold ID');
		const ans = await call(ctx, creds, 'PATCH', '/v1/holds', { auth: 'none', body: { holdId, clientId }, redact: [holdId] });
		return [{ clientId, ...ans.body }];
	}
	case 'release': {
		const holdId = required(ctx, 'holdId', i, 'hold ID');
		// The hold id is a bearer secret: errors name the path with its
		// public reference, as flowgate's logs do, and never carry the id.
		const ans = await call(ctx, creds, 'DELETE', `/v1/holds/${id(holdId)}`, {
			auth: 'none', query: [['clientId', clientId]], label: `/v1/holds/${holdRef(holdId)}`, redact: [holdId, id(holdId)],
		});
		return [{ holdId, clientId, ...ans.body }];
	}
	}
	throw new FlowgateError(`unknown hold operation ${op}`, { code: 'invalid' });
}
