package responseswire

// The objects a health check reads, and the error body of a refused call,
// members in the order the services write them.

// ErrorBody is the API's non-2xx body.
type ErrorBody struct {
	Error APIError `json:"error"`
}

// APIError is an ErrorBody's error.
type APIError struct {
	Message string  `json:"message"`
	Type    string  `json:"type"`
	Param   *string `json:"param"`
	Code    string  `json:"code"`
}

// Model is a model object (GET /models/{model}, and the items of GET
// /models) of OpenAI's API and of servers implementing it.
type Model struct {
	ID      string `json:"id"`
	Object  string `json:"object"` // "model"
	Created int64  `json:"created"`
	OwnedBy string `json:"owned_by"`
}

// NewModel is the model object of id.
func NewModel(id, ownedBy string) Model {
	return Model{ID: id, Object: "model", Created: 1741290958, OwnedBy: ownedBy}
}

// Deployment is a Foundry project's model deployment (GET
// {project}/deployments/{name}?api-version=v1): a ModelDeployment, as
// the projects API describes it.
type Deployment struct {
	Type           string            `json:"type"` // "ModelDeployment"
	Name           string            `json:"name"`
	ModelName      string            `json:"modelName"`
	ModelVersion   string            `json:"modelVersion"`
	ModelPublisher string            `json:"modelPublisher"`
	Capabilities   map[string]string `json:"capabilities"`
	Sku            DeploymentSku     `json:"sku"`
	ConnectionName string            `json:"connectionName,omitempty"`
}

// DeploymentSku is a deployment's SKU.
type DeploymentSku struct {
	Capacity int64  `json:"capacity"`
	Family   string `json:"family"`
	Name     string `json:"name"`
	Size     string `json:"size"`
	Tier     string `json:"tier"`
}

// NewDeployment is the deployment name of an OpenAI model.
func NewDeployment(name, model string) Deployment {
	return Deployment{
		Type: "ModelDeployment", Name: name, ModelName: model, ModelVersion: "2025-08-07", ModelPublisher: "OpenAI",
		Capabilities: map[string]string{"chat_completion": "true", "responses": "true"},
		Sku:          DeploymentSku{Capacity: 100, Name: "GlobalStandard"},
	}
}
