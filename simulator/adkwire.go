package simulator

import (
	"crypto/sha256"
	"encoding/base64"
	"fmt"
)

// uuid returns a version-4-shaped UUID drawn from Config.NewID, so that
// seeded ids stay deterministic: ADK names sessions, events and
// invocations with uuid4s.
func (s *Simulator) uuid() string {
	sum := sha256.Sum256([]byte(s.cfg.NewID("uuid")))
	b := sum[:16]
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}

// adkSignature stands for the opaque signature Gemini puts on
// function-call parts.
func adkSignature(id string) string {
	sum := sha256.Sum256([]byte(id))
	return base64.URLEncoding.EncodeToString(sum[:16])
}
