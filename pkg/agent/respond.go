package agent

import (
	"encoding/json"
	"io"
	"net/http"
)

// errorBody is the JSON shape of every error answer: {"error":"...","index":N?}.
type errorBody struct {
	Error string `json:"error"`
	Index *int   `json:"index,omitempty"`
}

// successBody is the answer to an accepted ingest request.
const successBody = `{"success":true}` + "\n"

// writeJSON answers code with v encoded as JSON.
func writeJSON(w http.ResponseWriter, code int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		code, b = http.StatusInternalServerError, []byte(`{"error":"encoding response failed"}`)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_, _ = w.Write(append(b, '\n'))
}

// writeError answers code with {"error":msg}.
func writeError(w http.ResponseWriter, code int, msg string) {
	writeJSON(w, code, errorBody{Error: msg})
}

// writeIndexError answers 400 with {"error":msg,"index":i}.
func writeIndexError(w http.ResponseWriter, msg string, i int) {
	writeJSON(w, http.StatusBadRequest, errorBody{Error: msg, Index: &i})
}

// writeUnavailable answers 503 with Retry-After: 1 and {"error":msg}.
func writeUnavailable(w http.ResponseWriter, msg string) {
	w.Header().Set("Retry-After", "1")
	writeError(w, http.StatusServiceUnavailable, msg)
}

// writeSuccess answers 200 {"success":true}.
func writeSuccess(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	_, _ = io.WriteString(w, successBody)
}
