package azureblob

import "testing"

func TestSplitContainerURL(t *testing.T) {
	for _, c := range []struct {
		in, account, container string
	}{
		{"https://acct.blob.core.windows.net/fixtures", "https://acct.blob.core.windows.net", "fixtures"},
		{"https://acct.blob.core.windows.net/fixtures/", "https://acct.blob.core.windows.net", "fixtures"},
		{"http://127.0.0.1:10000/devstoreaccount1/live-fixtures", "http://127.0.0.1:10000/devstoreaccount1", "live-fixtures"},
		{"https://acct.blob.core.windows.net", "", ""},
		{"https://acct.blob.core.windows.net/Fixtures", "", ""},
		{"https://acct.blob.core.windows.net/fixtures?sv=2024&sig=abc", "", ""},
		{"ftp://acct/fixtures", "", ""},
		{"./fixtures", "", ""},
	} {
		account, container, err := SplitContainerURL(c.in)
		if account != c.account || container != c.container || (err == nil) != (c.account != "") {
			t.Errorf("SplitContainerURL(%q) = %q, %q, %v", c.in, account, container, err)
		}
	}
	if !SameAccount("http://127.0.0.1:10000/devstoreaccount1", "http://127.0.0.1:10000/devstoreaccount1/") ||
		SameAccount("https://a.blob.core.windows.net", "https://b.blob.core.windows.net") {
		t.Error("SameAccount")
	}
}
