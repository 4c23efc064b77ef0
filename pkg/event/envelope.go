package event

// The Segment batch body that carries stored events to a collector: the events, exactly as
// stored and separated by commas, between BatchPrefix and BatchMid, then the send time
// (RFC 3339 with milliseconds, UTC) and BatchSuffix. batch.max_bytes is measured on it, so the
// uploader cuts batches by it whatever the destination, and the HTTP destination writes it.
const (
	BatchPrefix = `{"batch":[`
	BatchMid    = `],"sentAt":"`
	BatchSuffix = `"}`
	// BatchEnvelopeBytes is the size of the body without its events and commas: batch.max_bytes
	// less it (and a comma per event) is what a batch's events may take.
	BatchEnvelopeBytes = len(BatchPrefix) + len(BatchMid) + len("2006-01-02T15:04:05.000Z") + len(BatchSuffix)
)
