package river

const envWorker = "EVALRUN_RIVER_TEST_WORKER"

func workerProcessMain() int { return 0 }
