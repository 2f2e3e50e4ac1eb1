module github.com/hotlimit/hotlimit/redislimit

go 1.26.0

require (
	github.com/hotlimit/hotlimit v0.0.0-00010101000000-000000000000
	github.com/puzpuzpuz/xsync/v3 v3.5.1
	github.com/redis/go-redis/v9 v9.23.0
	github.com/stretchr/testify v1.12.1
)

require (
	github.com/cespare/xxhash/v2 v2.3.0 // indirect
	go.uber.org/atomic v1.12.0 // indirect
	go.yaml.in/yaml/v3 v3.0.5 // indirect
	golang.org/x/sys v0.48.0 // indirect
)

replace github.com/hotlimit/hotlimit => ../
