// Command compatdoc prints docs/compatibility.md.
package main

import (
	"fmt"

	"github.com/koord-project/koord/pkg/compat"
)

func main() { fmt.Print(compat.Markdown()) }
