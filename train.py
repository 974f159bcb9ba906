from rllm_sweeps.train import main  # the training app: one job, or a sweep with -m (`python train.py --help`)

if __name__ == "__main__":
    main()
