package main

import (
	"fmt"
	"strings"
)

// envBool reads a yes/no setting of the gateway: empty is false; 1, true, yes, on and 0, false, no, off are
// accepted in any case; anything else is an error naming the variable, so a typo is not silently "off".
func envBool(e env, key string) (bool, error) {
	switch v := strings.ToLower(strings.TrimSpace(e.getenv(key))); v {
	case "", "0", "false", "no", "off":
		return false, nil
	case "1", "true", "yes", "on":
		return true, nil
	default:
		return false, fmt.Errorf("%s must be 1, true, yes or on (or 0, false, no, off), got %q", key, e.getenv(key))
	}
}
