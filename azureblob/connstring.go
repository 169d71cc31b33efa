package azureblob

import (
	"errors"
	"fmt"
	"strings"
)

// DevConnectionString is Azurite's documented development account on its
// default blob port: the same as "UseDevelopmentStorage=true".
const DevConnectionString = "DefaultEndpointsProtocol=http;" +
	"AccountName=devstoreaccount1;" +
	"AccountKey=Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==;" +
	"BlobEndpoint=http://127.0.0.1:10000/devstoreaccount1;"

// ConfigFromConnectionString returns the Config for a storage connection
// string (the kind the portal shows, or AZURE_STORAGE_CONNECTION_STRING
// holds) and a container. Only account-key connection strings and
// "UseDevelopmentStorage=true" are supported; SAS connection strings are not.
func ConfigFromConnectionString(connStr, containerName string) (Config, error) {
	kv, err := parseConnectionString(connStr)
	if err != nil {
		return Config{}, err
	}
	if strings.EqualFold(kv["usedevelopmentstorage"], "true") {
		dev, err := parseConnectionString(DevConnectionString)
		if err != nil {
			return Config{}, err
		}
		kv = dev
	}
	if _, ok := kv["sharedaccesssignature"]; ok {
		return Config{}, errors.New("azureblob: SAS connection strings are not supported; use an account key or a token credential")
	}
	name, key := kv["accountname"], kv["accountkey"]
	if name == "" || key == "" {
		return Config{}, errors.New("azureblob: connection string needs AccountName and AccountKey")
	}
	accountURL := kv["blobendpoint"]
	if accountURL == "" {
		proto := kv["defaultendpointsprotocol"]
		if proto == "" {
			proto = "https"
		}
		suffix := kv["endpointsuffix"]
		if suffix == "" {
			suffix = "core.windows.net"
		}
		accountURL = fmt.Sprintf("%s://%s.blob.%s", proto, name, suffix)
	}
	return Config{AccountURL: accountURL, Container: containerName, AccountName: name, AccountKey: key}, nil
}

// parseConnectionString splits "Key=Value;..." into a map with lower-case
// keys. Values keep their '=' (account keys are base64).
func parseConnectionString(s string) (map[string]string, error) {
	kv := map[string]string{}
	for part := range strings.SplitSeq(s, ";") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		k, v, ok := strings.Cut(part, "=")
		if !ok || strings.TrimSpace(k) == "" {
			// The part may hold a key: never echo it.
			return nil, errors.New("azureblob: malformed connection string (want Key=Value pairs separated by ';')")
		}
		kv[strings.ToLower(strings.TrimSpace(k))] = strings.TrimSpace(v)
	}
	if len(kv) == 0 {
		return nil, errors.New("azureblob: empty connection string")
	}
	return kv, nil
}
