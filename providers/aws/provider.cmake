# AWS: EC2 over SigV4 (docs/providers/aws.md); sells the EFA fabric.
gpuctl_provider(aws SOURCES aws.c cleanup.c eip.c instances.c launch.c live_prices.c network.c ssh.c
                prices.c region.c config.c credentials.c imds.c ec2.c sigv4.c NODE_SCRIPT node.sh
                FABRIC efa efa.sh)
