# Alibaba Cloud ECS: plan only; catalog rows in catalog.csv.
gpuctl_provider(aliyun PLAN_ONLY SOURCES aliyun.c)
