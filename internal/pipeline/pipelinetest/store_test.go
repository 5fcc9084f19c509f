package pipelinetest

import "github.com/kustos-dev/kustos/internal/pipeline"

var _ pipeline.Store = (*ReplicaStore)(nil)
