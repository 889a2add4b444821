#!/bin/bash
# Restarts the background lanes (each run resumes from its snapshot with --resume; complete runs
# are skipped). Issue 30's covariate seeds 2 and 3: Random at a38b6ca (complete), then Cos weight
# FedSim and Inv loss FedSim at b4aa1e1 (issue 29's fast path; the same results to the printed
# digit as before it).
cd /work/paper
nohup nice -n 19 bash -c './lane.sh /work/paper/bin/meshlearn-launch-b4aa1e1 "fmnist-covariate.toml:2:cos_weights FedSim" "fmnist-covariate.toml:2:inv_loss FedSim"' > laneA.out 2>&1 &
sleep 1
nohup nice -n 19 bash -c './lane.sh /work/paper/bin/meshlearn-launch-b4aa1e1 "fmnist-covariate.toml:3:cos_weights FedSim" "fmnist-covariate.toml:3:inv_loss FedSim"' > laneB.out 2>&1 &
