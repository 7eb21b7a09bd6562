package contracts_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/flowgate/flowgate/contracts"
	"github.com/flowgate/flowgate/contracts/contractstest"
)

// A dead-lettered message with every field of the seed's BufferMessage set.
func sampleBufferMessage() contracts.BufferMessage {
	started, done := t0.Add(time.Second), t1
	return contracts.BufferMessage{
		MessageID: "msg-42", Type: "webhook.forward", Priority: contracts.BufferPriorityHigh, State: contracts.BufferDLQ,
		Payload: json.RawMessage(`{"to":"https://example.test/hook"}`),
		Metadata: contracts.BufferMetadata{CorrelationID: "c-1", Source: "crm", UserID: "u-7", CompanyID: "co-3",
			TraceID: "tr-9", Custom: json.RawMessage(`{"k":"v"}`)},
		AttemptCount: 4, MaxRetries: 3, ProcessingStartedAt: &started, LastProcessedAt: &done, VisibleAt: &done,
		WorkerID:       "host:123",
		Errors:         []contracts.BufferError{{Message: "downstream answered HTTP 503", Code: "HTTP_503", Timestamp: started, AttemptNumber: 1}},
		LastError:      &contracts.BufferLastError{Message: "downstream answered HTTP 503", Code: "HTTP_503", Timestamp: done},
		IdempotencyKey: "order-7", ExpiresAt: &done, CreatedAt: t0, UpdatedAt: t1,
	}
}

func TestBufferMessageGolden(t *testing.T) {
	contractstest.Golden(t, "buffer_message_dlq", sampleBufferMessage())
	contractstest.Golden(t, "buffer_message_pending", contracts.BufferMessage{MessageID: "m", Type: "email",
		State: contracts.BufferPending, Payload: json.RawMessage(`{}`), Errors: []contracts.BufferError{}, CreatedAt: t0, UpdatedAt: t0})
	var back contracts.BufferMessage
	raw, err := json.Marshal(sampleBufferMessage())
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(raw, &back))
	require.Equal(t, sampleBufferMessage(), back)
}

// Every buffer code maps to the seed's status through the one map.
func TestBufferCodesStatus(t *testing.T) {
	for c, want := range map[contracts.Code]int{
		contracts.CodeBufferQueueFull: 429, contracts.CodeInvalidMessage: 400, contracts.CodeHandlerNotFound: 400,
		contracts.CodeDuplicateMessage: 409, contracts.CodeShutdownInProgress: 503, contracts.CodePersistenceFailure: 503,
		contracts.CodeCircuitOpen: 503, contracts.CodeMessageTimeout: 504, contracts.CodeMaxRetriesExceeded: 409,
	} {
		require.Equal(t, want, c.HTTPStatus(), c)
	}
	require.True(t, contracts.BufferPriorityLow.Valid())
	require.False(t, contracts.BufferPriority(4).Valid())
}
