package uploader

import (
	"errors"
	"reflect"
	"testing"

	"github.com/outboxhq/outbox/pkg/queue"
)

func TestSources_RemovedSource_IsKeptWhileAnEnqueueBegunBeforeItsRemovalIsOnItsWay(t *testing.T) {
	s := newSources(SourcesConfig{Named: map[string]*SourceConfig{"app-a": {UploadWriteKey: "wk-a"}}})
	var held int64 // app-a's queued events, as the queue would count them
	s.queued = func() []queue.SourceStats { return []queue.SourceStats{{Name: "app-a", Events: held}} }

	leave, err := s.enter("app-a") // a request chose app-a just before the reload
	if err != nil || leave == nil {
		t.Fatalf("enter(app-a): %v", err)
	}
	sc := s.reconfigure(nil)
	if len(sc.removed) != 1 || sc.removed[0] != "app-a" {
		t.Fatalf("removed %v, want [app-a]", sc.removed)
	}
	if r, ok := s.route("app-a"); !ok || r.WriteKey != "wk-a" {
		t.Fatalf("route of app-a while its enqueue is on its way: %+v, %v; want its last key", r, ok)
	}
	held = 3 // the enqueue committed
	leave()
	s.sweep()
	if !s.isDraining("app-a") {
		t.Fatal("app-a forgotten while it holds events")
	}
	if s.known("app-a") {
		t.Fatal("a removed source is still handed out")
	}
	if leave, err := s.enter("app-a"); err != nil {
		t.Fatalf("enter(app-a) while it drains: %v", err)
	} else {
		leave()
	}
	held = 0 // delivered
	s.sweep()
	if s.isDraining("app-a") {
		t.Fatal("app-a still kept after it drained")
	}
	if _, ok := s.route("app-a"); ok {
		t.Fatal("app-a still routed after it drained")
	}
	if _, err := s.enter("app-a"); !errors.Is(err, ErrSourceRemoved) {
		t.Fatalf("enter(app-a) once forgotten: %v, want ErrSourceRemoved", err)
	}
}

func TestSources_Reconfigure_NamesWhatChanged(t *testing.T) {
	s := newSources(SourcesConfig{Named: map[string]*SourceConfig{
		"keep": {UploadWriteKey: "k"}, "rekey": {UploadWriteKey: "old"}, "share": {MaxBytes: 10}, "gone": {}}})
	s.queued = func() []queue.SourceStats { return nil }
	sc := s.reconfigure(map[string]*SourceConfig{
		"keep": {UploadWriteKey: "k"}, "rekey": {UploadWriteKey: "new"}, "share": {MaxBytes: 20}, "new": {UploadWriteKey: "n"}})
	want := sourceChanges{added: []string{"new"}, changed: []string{"rekey", "share"}, removed: []string{"gone"}, credentials: []string{"rekey"}}
	if !reflect.DeepEqual(sc, want) {
		t.Fatalf("changes %+v, want %+v", sc, want)
	}
	if s.isDraining("gone") {
		t.Fatal("a removed source without events is kept")
	}
	if got := s.shares(); got["share"] != 20 || len(got) != 1 {
		t.Fatalf("shares %v, want share: 20", got)
	}
}
