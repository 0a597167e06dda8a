package fakeapi

import (
	"context"
	"errors"
	"strings"
	"testing"

	"google.golang.org/genai"
)

// The fileSearchStores API as the genai SDK speaks it: every answer
// decodes into the SDK's own types.
func TestFileSearchStoresThroughTheSDK(t *testing.T) {
	s := New()
	t.Cleanup(s.Close)
	s.SetPendingPolls(1)
	c := sdkClient(t, s)
	ctx := context.Background()

	st, err := c.FileSearchStores.Create(ctx, &genai.CreateFileSearchStoreConfig{DisplayName: "My Project"})
	if err != nil || !strings.HasPrefix(st.Name, "fileSearchStores/my-project-") || st.DisplayName != "My Project" || st.CreateTime.IsZero() {
		t.Fatalf("Create: %+v, %v", st, err)
	}
	op, err := c.FileSearchStores.UploadToFileSearchStore(ctx, strings.NewReader("package main\n"), st.Name, &genai.UploadToFileSearchStoreConfig{
		MIMEType: "text/plain", DisplayName: "cmd/main.go",
		CustomMetadata: []*genai.CustomMetadata{{Key: "path", StringValue: "cmd/main.go"}},
	})
	if err != nil || op.Done || !strings.HasPrefix(op.Name, st.Name+"/upload/operations/") {
		t.Fatalf("UploadToFileSearchStore: %+v, %v; want a pending operation of the store", op, err)
	}
	if op, err = c.Operations.GetUploadToFileSearchStoreOperation(ctx, op, nil); err != nil || op.Done {
		t.Fatalf("first poll: %+v, %v; want still pending", op, err)
	}
	if op, err = c.Operations.GetUploadToFileSearchStoreOperation(ctx, op, nil); err != nil || !op.Done || op.Response == nil ||
		op.Response.Parent != st.Name || !strings.HasPrefix(op.Response.DocumentName, st.Name+"/documents/cmd-main-go-") {
		t.Fatalf("second poll: %+v, %v; want done with the document", op, err)
	}
	doc, err := c.FileSearchStores.Documents.Get(ctx, op.Response.DocumentName, nil)
	if err != nil || doc.DisplayName != "cmd/main.go" || doc.State != genai.DocumentStateActive || doc.SizeBytes != 13 ||
		doc.MIMEType != "text/plain" || len(doc.CustomMetadata) != 1 || doc.CustomMetadata[0].StringValue != "cmd/main.go" {
		t.Fatalf("Documents.Get: %+v, %v", doc, err)
	}
	got, err := c.FileSearchStores.Get(ctx, st.Name, nil)
	if err != nil || got.ActiveDocumentsCount != 1 || got.SizeBytes != 13 {
		t.Fatalf("Get: %+v, %v", got, err)
	}
	var names []string
	for d, err := range c.FileSearchStores.Documents.All(ctx, st.Name) {
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, d.Name)
	}
	if len(names) != 1 || names[0] != doc.Name {
		t.Fatalf("Documents.All: %v", names)
	}
	if err := c.FileSearchStores.Delete(ctx, st.Name, nil); err == nil || !strings.Contains(err.Error(), "non-empty") {
		t.Fatalf("Delete of a store with documents without force: %v, want refused", err)
	}
	if err := c.FileSearchStores.Documents.Delete(ctx, doc.Name, nil); err != nil {
		t.Fatalf("Documents.Delete: %v", err)
	}
	if _, err := c.FileSearchStores.Documents.Get(ctx, doc.Name, nil); !isCode(err, 404) {
		t.Fatalf("Documents.Get of a deleted document: %v, want 404", err)
	}
	force := true
	if err := c.FileSearchStores.Delete(ctx, st.Name, &genai.DeleteFileSearchStoreConfig{Force: &force}); err != nil {
		t.Fatalf("Delete: %v", err)
	}
	if _, err := c.FileSearchStores.Get(ctx, st.Name, nil); !isCode(err, 404) {
		t.Fatalf("Get of a deleted store: %v, want 404", err)
	}
	if _, err := c.FileSearchStores.UploadToFileSearchStore(ctx, strings.NewReader("x"), st.Name,
		&genai.UploadToFileSearchStoreConfig{MIMEType: "text/plain"}); err == nil {
		t.Fatal("an upload to a deleted store was taken")
	}
}

func TestFileSearchStoresListAndImport(t *testing.T) {
	s := New()
	t.Cleanup(s.Close)
	c := sdkClient(t, s)
	ctx := context.Background()
	for range 23 {
		if _, err := c.FileSearchStores.Create(ctx, nil); err != nil {
			t.Fatal(err)
		}
	}
	n := 0
	for _, err := range c.FileSearchStores.All(ctx) {
		if err != nil {
			t.Fatal(err)
		}
		n++
	}
	if n != 23 {
		t.Fatalf("All listed %d stores, want 23 (over pages)", n)
	}
	f, err := c.Files.Upload(ctx, strings.NewReader("notes\n"), &genai.UploadFileConfig{MIMEType: "text/plain", DisplayName: "notes.txt"})
	if err != nil {
		t.Fatal(err)
	}
	st := s.Stores()[0]
	op, err := c.FileSearchStores.ImportFile(ctx, st.Name, f.Name, nil)
	if err != nil || !strings.HasPrefix(op.Name, st.Name+"/operations/") {
		t.Fatalf("ImportFile: %+v, %v", op, err)
	}
	if op, err = c.Operations.GetImportFileOperation(ctx, op, nil); err != nil || !op.Done || op.Response == nil || op.Response.DocumentName == "" {
		t.Fatalf("import operation: %+v, %v", op, err)
	}
	if d := s.Documents(st.Name); len(d) != 1 || string(d[0].Data) != "notes\n" {
		t.Fatalf("documents after the import: %+v", d)
	}
}

func isCode(err error, code int) bool {
	var ae genai.APIError
	return errors.As(err, &ae) && ae.Code == code
}
