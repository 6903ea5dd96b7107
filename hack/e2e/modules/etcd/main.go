// Command etcd is go.etcd.io/etcd/v3's main.go: it hands over to etcdmain.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() {
	etcdmain.Main(os.Args)
}
